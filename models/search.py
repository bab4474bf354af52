"""A search result as the model was shown it: its number (what `[n]` in the answer cites)
and what it was (a web page, or a file's chunk); or a file code wrote in a container, which
the answer cites by its link (`sandbox:/mnt/data/...`)."""

from __future__ import annotations

from pydantic import BaseModel


class Source(BaseModel):
    number: int
    url: str = ""
    title: str = ""
    file_id: str | None = None
    """A file's chunk (`file_search`), cited as `file_citation`; else a web page, as `url_citation`."""
    filename: str | None = None
    container_id: str | None = None
    """A file code wrote in this container (at `path`, with `file_id` among the container's
    files), cited as `container_file_citation` where the answer links to it; `number` 0."""
    path: str | None = None
