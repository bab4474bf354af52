"""The type checker passes, strict, over every package of the house: those the project installs
and the benchmarks, with the test doubles they start (`[tool.mypy]` in `pyproject.toml`; a new
package is checked from its first commit, or this fails). A finding
fails the suite, naming it. Apart from `tests/unit/`: a first run takes a minute."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from tests.support.house import ROOT, folders


def test_every_package_is_checked() -> None:
    checked = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    assert sorted(checked) == folders()


def test_mypy_strict_finds_nothing() -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--hide-error-context"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
