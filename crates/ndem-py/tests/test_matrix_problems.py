"""Contact problems given by matrices (W, q, mu) and FCLIB files, solved
by the library's local solvers."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import ndem

SOLVERS = ["portfolio", "gauss-seidel", "newton", "apgd", "proximal"]


def coulomb_merit(w, q, mu, r):
    """FCLIB's merit (shared/fclib/README.md), written out independently:
    E = ||r - P_K(r - u_hat)|| / (1 + ||q||), u_hat = u + mu |u_t| e_n."""
    u = w @ r + q
    z = r.copy()
    for c in range(len(mu)):
        s = slice(3 * c, 3 * c + 3)
        uc = u[s].copy()
        uc[0] += mu[c] * np.linalg.norm(uc[1:])
        x = r[s] - uc
        n, t = x[0], np.linalg.norm(x[1:])
        if t <= mu[c] * n:
            p = x
        elif mu[c] * t <= -n:
            p = np.zeros(3)
        else:
            pn = (n + mu[c] * t) / (1 + mu[c] ** 2)
            p = np.concatenate([[pn], mu[c] * pn * x[1:] / t])
        z[s] = r[s] - p
    return np.linalg.norm(z) / (1 + np.linalg.norm(q))


@pytest.mark.parametrize("solver", SOLVERS)
def test_one_sticking_and_one_sliding_contact_have_their_analytic_reactions(solver):
    w = np.eye(6)
    # contact 0 pressed and at rest: r = (1, 0, 0); contact 1 pressed and
    # driven sideways beyond the cone: sliding with r_t = -mu r_n
    q = np.array([-1.0, 0.0, 0.0, -1.0, 2.0, 0.0])
    mu = np.array([0.5, 0.5])
    r, info = ndem.solve(sp.csr_array(w), q, mu, solver=solver)
    assert info["converged"] and info["status"] == "converged", info
    # each solver stops at a merit of 1e-8 (1e-10 for Newton); the error
    # in r is of that order
    assert np.allclose(r, [1, 0, 0, 1, -0.5, 0], rtol=0, atol=1e-7), (solver, r)
    assert info["merit"] <= 1e-8


def test_dense_and_sparse_matrices_give_the_same_answer_and_non_symmetric_w_is_taken():
    rng = np.random.default_rng(7)
    a = rng.normal(size=(9, 9))
    w = a @ a.T + 9 * np.eye(9)
    w[0, 4] += 0.3  # not symmetric
    q = rng.normal(size=9)
    q[[0, 3, 6]] = -1.0
    mu = np.array([0.3, 0.6, 0.9])
    r_dense, info_dense = ndem.solve(w, q, mu, solver="newton")
    r_sparse, info_sparse = ndem.solve(sp.coo_matrix(w), q, mu, solver="newton")
    assert np.array_equal(r_dense, r_sparse)
    assert info_dense["converged"] and info_sparse["converged"]
    assert coulomb_merit(w, q, mu, r_dense) <= 1e-10


def test_an_fclib_problem_is_solved_to_the_tolerance_by_the_independent_merit(fclib_dir):
    path = fclib_dir / "Box_Stacks-i0122-82-5.hdf5"
    if not path.exists():
        pytest.skip(f"{path} not present")
    w, q, mu = ndem.read_fclib(str(path))
    assert w.shape == (3 * 82, 3 * 82) and q.shape == (246,) and mu.shape == (82,)
    r, info = ndem.solve(w, q, mu)
    assert info["converged"], info
    merit = coulomb_merit(w.toarray(), q, mu, r)
    # the library's merit and this one are the same formula
    assert np.isclose(merit, info["merit"], rtol=1e-6, atol=1e-14)
    assert merit <= 1e-8


def test_an_unconverged_answer_says_so_with_a_warning(fclib_dir):
    path = fclib_dir / "LMGC_100_PR_PerioBox-i00361-60-03000.hdf5"
    if not path.exists():
        pytest.skip(f"{path} not present")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r, info = ndem.solve(*ndem.read_fclib(str(path)), solver="gauss-seidel", max_iterations=3)
    assert not info["converged"] and info["status"] != "converged"
    assert info["iterations"] == 3
    assert any("not a solution" in str(c.message) for c in caught)
    assert np.all(np.isfinite(r))


def test_bad_problems_raise_value_errors_naming_the_argument():
    # two friction coefficients for a 3 x 3 W: the sizes disagree
    with pytest.raises(ValueError, match="W.nrows"):
        ndem.solve(np.eye(3), np.array([-1.0, 0, 0]), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="q"):
        ndem.solve(np.eye(3), np.array([np.nan, 0, 0]), np.array([0.5]))
    with pytest.raises(ValueError, match="solver"):
        ndem.solve(np.eye(3), np.array([-1.0, 0, 0]), np.array([0.5]), solver="lemke")
    with pytest.raises(ValueError, match="W"):
        ndem.solve("not a matrix", np.array([-1.0, 0, 0]), np.array([0.5]))
    with pytest.raises(ValueError, match="r0"):
        ndem.solve(np.eye(3), np.array([-1.0, 0, 0]), np.array([0.5]), r0=np.array([np.inf, 0, 0]))
