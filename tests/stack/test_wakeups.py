"""Processes that share a store wake each other: a stream served by one process hears of the
events another writes, and a worker hears of a cancel another process recorded, without
waiting for the poll (here an hour, so only a wake-up can do it); on both stores."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from store.notifier import Wakeup
from store.opening import open_database
from store.repository import ResponseRepository
from store.wakeups import LocalSocketWakeups
from tests.support.stack import EmptyStore

NEVER = 3600.0
"""A poll interval no test outlives: what arrives came by a wake-up."""


async def _two_processes(store: EmptyStore) -> tuple[ResponseRepository, ResponseRepository]:
    """Two repositories on two connections to one store, as two processes have."""
    writer_db, reader_db = open_database(store.url), open_database(store.url)
    await writer_db.migrate()
    return (
        ResponseRepository(writer_db, stream_poll_seconds=NEVER, cancel_poll_seconds=NEVER),
        ResponseRepository(reader_db, stream_poll_seconds=NEVER, cancel_poll_seconds=NEVER),
    )


async def _woken(waiter: Wakeup) -> None:
    await asyncio.wait_for(waiter.future, 10)


async def test_events_written_by_one_process_wake_the_streams_of_another(store: EmptyStore):
    writer, reader = await _two_processes(store)
    try:
        waiter = reader.events.notifier.subscribe("resp_a")
        for _ in range(100):  # the reader's listening starts with its first waiter
            if reader.db.wakeups.hearing():
                break
            await asyncio.sleep(0.02)
        await writer.events.append("resp_a", [{"type": "response.in_progress"}])
        await _woken(waiter)
        other = reader.events.notifier.subscribe("resp_b")
        await writer.events.append("resp_a", [{"type": "response.output_text.delta", "delta": "x"}])
        await asyncio.sleep(0.2)
        assert not other.future.done(), "a wake-up woke the waiters of another response"
    finally:
        await writer.db.close()
        await reader.db.close()


async def test_a_cancel_recorded_by_one_process_wakes_the_worker_of_another(store: EmptyStore):
    api, worker = await _two_processes(store)
    try:
        waiter = worker.cancels.notifier.subscribe("resp_c")
        for _ in range(100):
            if worker.db.wakeups.hearing():
                break
            await asyncio.sleep(0.02)
        await api.cancels.request("resp_c")
        await _woken(waiter)
    finally:
        await api.db.close()
        await worker.db.close()


async def test_a_dead_process_socket_is_removed_and_costs_the_others_nothing(tmp_path: Path):
    directory = tmp_path / "responses.db.wakeups"
    directory.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dead.bind(str(directory / "1-dead.sock"))
    dead.close()  # its process died without removing it
    wakeups = LocalSocketWakeups(directory)
    try:
        wakeups.publish("events", "resp_a")
        assert os.listdir(directory) == []
        wakeups.publish("events", "resp_a")  # nobody listens: nothing to do, nothing raised
    finally:
        await wakeups.close()


async def test_the_sockets_directory_is_private_and_a_deep_data_directory_still_works(tmp_path: Path):
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 5)  # past a socket path's 108 bytes
    deep.mkdir(parents=True)
    heard: list[str] = []
    listener, sender = LocalSocketWakeups(deep / "w"), LocalSocketWakeups(deep / "w")
    try:
        listener.listen("events", heard.append)
        assert await listener.hear()
        assert oct((deep / "w").stat().st_mode & 0o777) == oct(0o700)
        sender.publish("events", "resp_deep")
        for _ in range(100):
            if heard:
                break
            await asyncio.sleep(0.01)
        assert heard == ["resp_deep"]
    finally:
        await listener.close()
        await sender.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(junk=st.binary(max_size=400))
async def test_whatever_arrives_on_the_socket_wakes_at_most_a_key_and_never_breaks_listening(
    tmp_path: Path, junk: bytes
):
    directory = tmp_path / "junk"
    heard: list[str] = []
    listener = LocalSocketWakeups(directory)
    try:
        listener.listen("events", heard.append)
        assert await listener.hear()
        (name,) = os.listdir(directory)
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as stranger:
            stranger.sendto(junk, str(directory / name))
            stranger.sendto(b"events\nresp_after", str(directory / name))
        for _ in range(100):
            if "resp_after" in heard:
                break
            await asyncio.sleep(0.005)
        assert heard[-1] == "resp_after" and len(heard) <= 2
    finally:
        await listener.close()
