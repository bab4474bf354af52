"""Waiting, at start, for what a process needs (Temporal, the database), with one line while
it waits and one `StartupError` that says what could not be reached and why when the wait is
over, instead of a line per attempt and a traceback."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from models.errors import StartupError

log = logging.getLogger(__name__)

T = TypeVar("T")
RETRY_SECONDS = 0.5


TRANSIENT = (OSError, asyncio.TimeoutError, RuntimeError)
"""What a dependency that is still starting raises (refused connections, Temporal's
`RuntimeError: Failed client connect`); anything else will not mend by waiting."""


async def wait_for(what: str, attempt: Callable[[], Awaitable[T]], *, seconds: float, hint: str = "") -> T:
    """`attempt()` until it succeeds or `seconds` have passed; an error waiting cannot mend
    (a refused password, a database that does not exist) ends the wait at once."""
    deadline = time.monotonic() + seconds
    announced = False
    while True:
        try:
            return await attempt()
        except TRANSIENT as error:
            cause = _cause(error)
        except Exception as error:  # noqa: BLE001 - said in one line, not a traceback
            raise StartupError(f"cannot use {what}: {_cause(error)}{hint}") from error
        if time.monotonic() >= deadline:
            raise StartupError(f"cannot reach {what} after {seconds:g} s: {cause}{hint}")
        if not announced:
            log.info("waiting up to %g s for %s (%s)", seconds, what, cause)
            announced = True
        await asyncio.sleep(RETRY_SECONDS)


_OS_MESSAGE = re.compile(r'message: "([^"]+)"')


def _cause(error: BaseException) -> str:
    """The error in a few words: the OS's own message where a wrapped one carries it."""
    text = str(error).strip()
    found = _OS_MESSAGE.search(text)
    if found:
        return found.group(1)
    lines = text.splitlines()
    return f"{type(error).__name__}: {lines[-1][:300]}" if lines else type(error).__name__
