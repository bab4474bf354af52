"""Chores the workers run now and then, each on its own: one that fails is logged and
tried again next time, and never keeps the others from running.

Each chore is the cluster's: with `leases`, a chore runs on the one worker that holds its
lease (renewed each round; taken over by another within `LEASE_ROUNDS` rounds of its
holder's death; renewed while a chore outlasts a round), so ten workers sweep once, not ten
times. With `woken`, a round starts as soon as it is set, not only every interval. A chore
with a check in `due` runs (and takes its lease, a write) only in a round whose check finds
work: an idle cluster polling often for rare work writes nothing."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from store.leases import Leases

log = logging.getLogger(__name__)

Chore = Callable[[], Awaitable[Any]]
Check = Callable[[], Awaitable[bool]]


LEASE_ROUNDS = 2.5
"""A chore's lease lasts this many rounds: a holder renews it each round."""


async def keep_house(
    chores: Mapping[str, Chore],
    interval_seconds: float,
    stop: asyncio.Event,
    *,
    leases: Leases | None = None,
    holder: str | None = None,
    woken: asyncio.Event | None = None,
    due: Mapping[str, Check] | None = None,
) -> None:
    holder = holder or uuid.uuid4().hex
    lease_seconds = interval_seconds * LEASE_ROUNDS
    while not stop.is_set():
        if woken is not None:
            woken.clear()
        for name, chore in chores.items():
            try:
                if due is not None and name in due and not await due[name]():
                    continue  # nothing to do: a holder that stops renewing lets its lease run out
                if leases is not None and not await leases.take(name, holder, lease_seconds):
                    continue  # another worker runs it
                running = asyncio.ensure_future(chore())
                while not running.done():  # a chore that outlasts a round keeps its lease
                    await asyncio.wait({running}, timeout=interval_seconds)
                    if not running.done() and leases is not None:
                        await leases.take(name, holder, lease_seconds)
                running.result()
            except Exception as error:  # noqa: BLE001 - the next round tries again
                log.warning("%s failed: %s", name, error)
        waits = {asyncio.ensure_future(stop.wait())} | ({asyncio.ensure_future(woken.wait())} if woken else set())
        await asyncio.wait(waits, timeout=interval_seconds, return_when=asyncio.FIRST_COMPLETED)
        for waiting in waits:
            waiting.cancel()
