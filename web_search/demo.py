"""The demo provider: searches this project's own README and `docs/` (the copies beside the
code), so a newcomer watches a search, its sources and its citations with nothing set up.
Each section (a Markdown heading and what follows it) is a page; pages are ranked by how
well they hold the query's words (rare words count more, long sections less). Its URLs are
`file://` links to the sections."""

from __future__ import annotations

import math
import re
from functools import lru_cache
from pathlib import Path

from web_search.provider import SearchQuery, SearchResult, cut

ROOT = Path(__file__).resolve().parent.parent
WORD = re.compile(r"[a-z0-9]{3,}")


@lru_cache(maxsize=1)
def _sections() -> tuple[tuple[str, str, str, frozenset[str]], ...]:
    """(url, title, text, words) of every section of the README and docs."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        if not path.is_file():
            continue
        title, lines = path.stem, list[str]()
        for line in [*path.read_text(encoding="utf-8").splitlines(), "# end"]:
            if line.startswith("#"):
                text = "\n".join(lines).strip()
                if text:
                    anchor = re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")
                    found.append(
                        (
                            f"{path.as_uri()}#{anchor}",
                            f"{path.name}: {title}",
                            text,
                            frozenset(WORD.findall(text.lower())),
                        )
                    )
                title, lines = line.lstrip("#").strip(), []
            else:
                lines.append(line)
    return tuple(found)


class DemoSearchProvider:
    name = "demo"

    async def search(self, query: SearchQuery) -> list[SearchResult]:
        sections = _sections()
        wanted = set(WORD.findall(query.query.lower()))
        rarity = {
            word: math.log(len(sections) / (1 + sum(word in words for *_, words in sections))) + 1 for word in wanted
        }
        scored = [
            (sum(rarity[word] for word in wanted & words) / math.log(len(words) + 2), url, title, text)
            for url, title, text, words in sections
        ]
        ranked = sorted((each for each in scored if each[0] > 0), key=lambda each: -each[0])
        return [
            SearchResult(url=url, title=title, snippet=cut(text)) for _, url, title, text in ranked[: query.max_results]
        ]
