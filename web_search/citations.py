"""What the model is shown of a search, and the citations read back from its answer.

Each result gets a number that runs on through the response (the second search's first
result follows the first search's last), and the model is asked to cite it as `[n]`. In the
final message, each `[n]` naming a source becomes a `url_citation` annotation over the
marker (`start_index`, `end_index`: character offsets of `[n]` in the text); each naming a
file's chunk (`file_search`), a `file_citation` at the marker (`index`). A link to a file code
wrote in a container (`sandbox:/mnt/data/chart.png`) becomes a `container_file_citation` over
the link. Pure.
"""

from __future__ import annotations

import re
from typing import Any

from models.search import Source
from web_search.provider import SearchResult

MARKER = re.compile(r"\[(\d{1,4})\]")
SANDBOX_LINK = re.compile(r"sandbox:(/mnt/data/[^\s()\[\]<>\"']{1,1024})")
TITLE_CHARS = 200
"""A citation's title is cut to this many characters."""


def numbered(results: list[SearchResult], first: int) -> list[Source]:
    return [
        Source(number=first + index, url=result.url, title=result.title[:TITLE_CHARS])
        for index, result in enumerate(results)
    ]


def shown_to_model(query: str, results: list[SearchResult], sources: list[Source]) -> str:
    if not results:
        return f"The web search for {query!r} found nothing."
    lines = [f"Web search results for {query!r}. Cite a result you use with its number in brackets, like [1]."]
    for source, result in zip(sources, results, strict=True):
        lines.append(f"[{source.number}] {result.title}\n{source.url}\n{result.snippet}")
    return "\n\n".join(lines)


def citation_annotations(text: str, sources: list[Source]) -> list[dict[str, Any]]:
    """The annotations of the markers in `text` that name a source: `file_citation` for a
    file's chunk (`index`: where its marker starts), `url_citation` for a web page."""
    by_number = {source.number: source for source in sources if source.number > 0}
    found = []
    for match in MARKER.finditer(text):
        source = by_number.get(int(match.group(1)))
        if source is not None and source.file_id is not None:
            found.append(
                {
                    "type": "file_citation",
                    "file_id": source.file_id,
                    "filename": source.filename or "",
                    "index": match.start(),
                }
            )
        elif source is not None:
            found.append(
                {
                    "type": "url_citation",
                    "url": source.url,
                    "title": source.title,
                    "start_index": match.start(),
                    "end_index": match.end(),
                }
            )
    return found + container_citations(text, sources)


def container_citations(text: str, sources: list[Source]) -> list[dict[str, Any]]:
    files = {source.path: source for source in sources if source.container_id is not None}
    if not files:
        return []
    found = []
    for match in SANDBOX_LINK.finditer(text):
        path = match.group(1).rstrip(".,;:!?")  # the sentence's end is not the path's
        source = files.get(path)
        if source is not None:
            found.append(
                {
                    "type": "container_file_citation",
                    "container_id": source.container_id,
                    "file_id": source.file_id,
                    "filename": source.filename or "",
                    "start_index": match.start(),
                    "end_index": match.start(1) + len(path),
                }
            )
    return found
