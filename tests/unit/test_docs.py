"""The README and `docs/` hold together: every relative link names a file that exists, and
every `#anchor` a heading of its page; every file a page or a docstring names in backticks
(`store/turns.py`) exists, so a move leaves no page pointing at the old place; the README
stays the front door (at most 250 lines)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
NAMED_FILE = re.compile(r"`((?:[a-z_]+/)+[a-z_0-9]+\.(?:py|md|yaml|toml|js))`")
"""A file of the house named in backticks, by its path from the root (`api/responses.py`)."""


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the page's headings (outside code blocks)."""
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (heading := re.match(r"^#{1,6} (.+)$", line)):
            found.add(re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_link_resolves(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto: another site's
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


def test_every_file_a_page_or_a_docstring_names_exists() -> None:
    sources = [*PAGES, *(path for path in ROOT.glob("*/**/*.py") if ".venv" not in path.parts)]
    missing = sorted(
        f"{source.relative_to(ROOT)}: {named}"
        for source in sources
        for named in NAMED_FILE.findall(source.read_text(encoding="utf-8"))
        if not (ROOT / named).exists() and not (ROOT / "docs" / named).exists()
    )
    assert not missing, "\n".join(missing)


def test_the_readme_is_the_front_door() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= 250, f"README.md has {lines} lines; the depth belongs in docs/"


def test_the_bench_has_a_place_for_its_figures_in_each_page() -> None:
    from bench import docs

    table = f"header\n\n{docs.GOALS_TITLE}\n\n| measured | goal |\n| --- | --- |\n| a | b |\n\nmore"
    assert docs.goals_table(table) == "| measured | goal |\n| --- | --- |\n| a | b |"
    sdk = f"header\n\n{docs.SDK_TITLE}\n\n| p50 | goal |\n| --- | --- |\n| a | b |\n\nmore"
    assert docs.goals_table(sdk, docs.SDK_TITLE) == "| p50 | goal |\n| --- | --- |\n| a | b |"
    pages = (
        (ROOT / "docs" / "benchmarks.md", "figures"),
        (ROOT / "docs" / "benchmarks.md", "burst"),
        (ROOT / "README.md", "goals"),
        (ROOT / "README.md", "sdk"),
    )
    for page, name in pages:
        text = page.read_text(encoding="utf-8")
        written = docs.replace_block(text, name, "FIGURES")
        assert "FIGURES" in written and written.count("<!-- /bench.run -->") == text.count("<!-- /bench.run -->")
        assert docs.replace_block(written, name, "AGAIN").replace("AGAIN", "FIGURES") == written
