"""Shared fixtures: the `ndem` command the Python results are checked
against, and the repository root."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def ndem_cli() -> list[str]:
    """The `ndem` command: $NDEM_CLI, else the workspace's debug build
    (built here by cargo when missing)."""
    given = os.environ.get("NDEM_CLI")
    if given:
        return [given]
    binary = ROOT / "target" / "debug" / "ndem"
    if not binary.exists():
        cargo = shutil.which("cargo")
        if cargo is None:
            pytest.fail("no `ndem` command: set NDEM_CLI or install cargo")
        subprocess.run([cargo, "build", "-q", "-p", "ndem-cli"], cwd=ROOT, check=True)
    return [str(binary)]


@pytest.fixture(scope="session")
def fclib_dir() -> pathlib.Path:
    """The FCLIB problems beside the repository (shared/fclib)."""
    return ROOT.parent / "shared" / "fclib"
