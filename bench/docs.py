"""The figures of a `python -m bench.run --write-docs` run, written where people read them: the
whole table into `docs/benchmarks.md`, the issue's goals table into the README's "How fast".
Each goes between its markers (`<!-- bench.run: NAME -->` ... `<!-- /bench.run -->`), so the
prose around them stays as written and a run replaces only its own figures."""

from __future__ import annotations

import datetime
import os
import re
import subprocess
from pathlib import Path

from bench.goals import ISSUE_61_TITLE

ROOT = Path(__file__).resolve().parent.parent
GOALS_TITLE = "First token at the backend's pace, beside the peers (issue 42)"
SDK_TITLE = ISSUE_61_TITLE


def commit() -> str:
    """The commit measured, marked dirty when the work tree differs from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    return head.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def goals_table(table: str, title: str = GOALS_TITLE) -> str:
    """The table under `title` out of the whole run's."""
    lines = table.splitlines()
    start = lines.index(title) + 2
    end = next((index for index in range(start, len(lines)) if not lines[index].strip()), len(lines))
    return "\n".join(lines[start:end])


def replace_block(text: str, name: str, figures: str) -> str:
    """`text` with the block `name` holding `figures` (ValueError when it has no such block)."""
    pattern = re.compile(rf"(<!-- bench\.run: {re.escape(name)} -->\n)(?:.*?\n)?(<!-- /bench\.run -->)", re.S)
    if not pattern.search(text):
        raise ValueError(f"no <!-- bench.run: {name} --> block")
    return pattern.sub(lambda found: found.group(1) + figures.rstrip("\n") + "\n" + found.group(2), text, count=1)


def measured_by(command: str, seconds: float) -> str:
    return (
        f"Measured by `{command}` at `{commit()}` on {datetime.date.today().isoformat()}, "
        f"{os.cpu_count()} cores, in {seconds:.0f} s:"
    )


def write_block(name: str, table: str, seconds: float, command: str) -> Path:
    """One benchmark's figures into its own block of docs/benchmarks.md; returns the page."""
    page = ROOT / "docs" / "benchmarks.md"
    figures = f"{measured_by(command, seconds)}\n\n{table.strip()}"
    page.write_text(replace_block(page.read_text(encoding="utf-8"), name, figures), encoding="utf-8")
    return page


def write(table: str, seconds: float) -> list[Path]:
    """Write this run's figures into the docs; returns the files written."""
    measured = measured_by("python -m bench.run", seconds)
    blocks = [
        (ROOT / "docs" / "benchmarks.md", "figures", f"{measured}\n\n{table.strip()}"),
        (ROOT / "README.md", "goals", f"{measured}\n\n{goals_table(table)}"),
        (ROOT / "README.md", "sdk", goals_table(table, SDK_TITLE)),
    ]
    for page, name, figures in blocks:
        page.write_text(replace_block(page.read_text(encoding="utf-8"), name, figures), encoding="utf-8")
    return sorted({page for page, _, _ in blocks})
