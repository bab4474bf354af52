"""Chores the workers run now and then, each on its own: one that fails is logged and
tried again next time, and never keeps the others from running.

Each chore is the cluster's: with `leases`, a chore runs on the one worker that holds its
lease (renewed each round; taken over by another within `LEASE_ROUNDS` rounds of its
holder's death), so ten workers sweep once, not ten times."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from store.leases import Leases

log = logging.getLogger(__name__)

Chore = Callable[[], Awaitable[Any]]


LEASE_ROUNDS = 2.5
"""A chore's lease lasts this many rounds: a holder renews it each round."""


async def keep_house(chores: dict[str, Chore], interval_seconds: float, stop: asyncio.Event, *,
                     leases: Leases | None = None, holder: str | None = None) -> None:
    holder = holder or uuid.uuid4().hex
    while not stop.is_set():
        for name, chore in chores.items():
            try:
                if leases is not None and not await leases.take(name, holder, interval_seconds * LEASE_ROUNDS):
                    continue  # another worker runs it
                await chore()
            except Exception as error:  # noqa: BLE001 - the next round tries again
                log.warning("%s failed: %s", name, error)
        try:
            await asyncio.wait_for(stop.wait(), interval_seconds)
        except TimeoutError:
            pass
