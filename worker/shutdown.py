"""A process's stop: asked for by the first SIGINT/SIGTERM, forced by the second.

The roles register what a stop waits for (open requests, model calls), so the CLI can say,
in the line it prints when asked to stop, what it waits for and for how long at most.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Shutdown:
    def __init__(self) -> None:
        self.requested = asyncio.Event()
        """Set by the first signal: roles stop taking work and let what runs finish."""
        self.forced = asyncio.Event()
        """Set by the second signal: what is left is cancelled at once."""
        self._waited: list[tuple[str, Callable[[], int]]] = []
        self._abandoned: list[tuple[str, Callable[[], int]]] = []

    def track(self, what: str, count: Callable[[], int], *, waited: bool = True) -> None:
        """`what` names one of the things `count` counts (`open request`); a stop waits for
        them to finish, or (not `waited`) abandons them to be done again at the next start."""
        (self._waited if waited else self._abandoned).append((what, count))

    def signalled(self) -> None:
        if self.requested.is_set():
            self.forced.set()
        self.requested.set()

    def waiting_for(self) -> str:
        """What a stop waits for, in words (`2 open requests`), or ``."""
        return _counted(self._waited)

    def abandoning(self) -> str:
        """What a stop abandons, in words (`1 model call`), or ``."""
        return _counted(self._abandoned)


def _counted(tracked: list[tuple[str, Callable[[], int]]]) -> str:
    return ", ".join(f"{number} {what}{'' if number == 1 else 's'}" for what, count in tracked if (number := count()))
