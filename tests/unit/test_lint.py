"""The house's code is formatted by `ruff format` and passes `ruff check` with the rules
`pyproject.toml` selects. A finding, or a file the formatter would change, fails the suite,
naming it: `ruff format . && ruff check --fix .` mends most of them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def ruff(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *arguments, "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ruff_finds_nothing() -> None:
    checked = ruff("check", "--output-format", "concise")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_code_is_formatted() -> None:
    formatted = ruff("format", "--check")
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
