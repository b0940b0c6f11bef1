//! Projection onto the second-order (Coulomb) cone.

/// Euclidean projection onto the second-order cone
/// `{(a, t) : ‖t‖ ≤ μ a}` of `(a, t)`, in place.
pub fn project_cone(mu: f64, a: &mut f64, t: &mut [f64]) {
    let tn = t.iter().map(|x| x * x).sum::<f64>().sqrt();
    if tn <= mu * *a {
        return;
    }
    if mu * tn <= -*a || mu == 0.0 && *a <= 0.0 {
        *a = 0.0;
        t.iter_mut().for_each(|x| *x = 0.0);
        return;
    }
    if mu == 0.0 {
        t.iter_mut().for_each(|x| *x = 0.0);
        return;
    }
    let an = (*a + mu * tn) / (1.0 + mu * mu);
    let s = mu * an / tn;
    *a = an;
    t.iter_mut().for_each(|x| *x *= s);
}
