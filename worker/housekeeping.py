"""Chores every worker runs now and then, each on its own: one that fails is logged and
tried again next time, and never keeps the others from running."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

Chore = Callable[[], Awaitable[Any]]


async def keep_house(chores: dict[str, Chore], interval_seconds: float, stop: asyncio.Event) -> None:
    while not stop.is_set():
        for name, chore in chores.items():
            try:
                await chore()
            except Exception as error:  # noqa: BLE001 - the next round tries again
                log.warning("%s failed: %s", name, error)
        try:
            await asyncio.wait_for(stop.wait(), interval_seconds)
        except TimeoutError:
            pass
