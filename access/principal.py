"""Who a request acts for."""

from __future__ import annotations

from dataclasses import dataclass

from store.schema import NO_PROJECT


@dataclass(frozen=True)
class Principal:
    project: str
    """Every response and conversation belongs to one project; a request sees only its own."""
    key_id: str | None
    """The API key's id (never the key); None while the server runs open (no keys exist)."""
    approver: bool = False
    """An approve-only key: it may read its project's waiting responses and decide approvals."""

    @property
    def limit_key(self) -> str:
        """What per-key limits count against."""
        return self.key_id or "open"


OPEN = Principal(project=NO_PROJECT, key_id=None)
"""The principal of every request while no API key exists."""
