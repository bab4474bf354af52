"""The type checker passes, strict, where the house's decisions and data live: `models/`,
`workflows/` and `store/` (`[tool.mypy]` in `pyproject.toml`). A finding fails the suite,
naming it. Apart from `tests/unit/`: a first run takes a minute."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_strict_finds_nothing() -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", "--hide-error-context"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
