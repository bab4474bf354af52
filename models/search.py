"""A search result as the model was shown it: its number (what `[n]` in the answer cites)."""

from __future__ import annotations

from pydantic import BaseModel


class Source(BaseModel):
    number: int
    url: str
    title: str = ""
