"""Wake-ups between the processes that share one store, so that a stream served by one
process hears of events written by another at once rather than at its next poll.

A wake-up says only "look again" (a topic and a key, such as a response id): readers read
the store as they always do, so a lost wake-up costs time, never correctness, and the
notifier's poll stays as the safety net.

- **SQLite** (processes on one machine sharing one file): each process that waits binds a
  Unix datagram socket in a private directory beside the database (`<file>.wakeups/`, mode
  0700); a process that changed something sends the key to every socket there. A send
  never blocks: a full queue or a socket whose process died drops the wake-up (a dead one's
  socket is removed).
- **PostgreSQL**: `NOTIFY` on one channel, `LISTEN`ed to on one connection of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import secrets
import socket
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)

OnWake = Callable[[str], None]
"""Called with a woken key, in the event loop."""

MAX_KEY_BYTES = 200
"""Keys are ids; anything longer is not ours and is dropped."""


class Wakeups(Protocol):
    def publish(self, topic: str, key: str) -> None:
        """Tell the other processes that `key` changed (never blocks, never raises)."""

    def listen(self, topic: str, on_wake: OnWake) -> None:
        """Call `on_wake` for the keys other processes publish on `topic`, once hearing."""

    def hearing(self) -> bool:
        """Whether wake-ups from other processes reach this one now."""

    async def hear(self) -> bool:
        """Start hearing, if not yet (or again, after a lost connection); whether it does."""

    async def close(self) -> None: ...


def _message(topic: str, key: str) -> bytes | None:
    data = f"{topic}\n{key}".encode()
    return data if len(data) <= MAX_KEY_BYTES else None


def _parsed(data: bytes) -> tuple[str, str] | None:
    topic, _, key = data.decode(errors="replace").partition("\n")
    return (topic, key) if key else None


class _Listeners:
    def __init__(self) -> None:
        self.by_topic: dict[str, list[OnWake]] = defaultdict(list)

    def add(self, topic: str, on_wake: OnWake) -> None:
        if on_wake not in self.by_topic[topic]:
            self.by_topic[topic].append(on_wake)

    def deliver(self, data: bytes) -> None:
        parsed = _parsed(data)
        if parsed is None:
            return
        topic, key = parsed
        for on_wake in self.by_topic.get(topic, ()):
            on_wake(key)


class LocalSocketWakeups:
    """Unix datagram sockets in a directory beside the SQLite file (see the module's text).
    Paths go through `/proc/self/fd/<directory>` so a deep data directory does not exceed
    a socket path's 108 bytes."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._directory_fd: int | None = None
        self._sender: socket.socket | None = None
        self._receiver: socket.socket | None = None
        self._name = f"{os.getpid()}-{secrets.token_hex(6)}.sock"
        self._peers: list[str] = []
        self._seen_mtime = -1
        self._listeners = _Listeners()

    def _path(self, name: str) -> str:
        return f"/proc/self/fd/{self._directory_fd}/{name}"

    def _open_directory(self) -> bool:
        if self._directory_fd is not None:
            return True
        try:
            self.directory.mkdir(mode=0o700, exist_ok=True)
            self._directory_fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as error:
            log.info("no wake-ups between processes (%s): streams poll the store", error)
            return False
        self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sender.setblocking(False)
        return True

    def publish(self, topic: str, key: str) -> None:
        message = _message(topic, key)
        if message is None or not self._open_directory():
            return
        sender = self._sender
        assert sender is not None  # the directory is open
        for peer in self._current_peers():
            try:
                sender.sendto(message, self._path(peer))
            except (BlockingIOError, InterruptedError):
                pass  # its queue is full: it polls
            except OSError as error:
                if error.errno in (errno.ECONNREFUSED, errno.ENOENT):  # its process is gone
                    with contextlib.suppress(OSError):
                        os.unlink(self._path(peer))
                    self._seen_mtime = -1

    def _current_peers(self) -> list[str]:
        """The sockets in the directory (but this process's own), listed again only when
        the directory changed: a new listener is heard from its first wake-up on."""
        if self._directory_fd is None:
            return []
        try:
            mtime = os.stat(self._directory_fd).st_mtime_ns
        except OSError:
            return []
        if mtime != self._seen_mtime:
            self._seen_mtime = mtime
            self._peers = [
                name for name in os.listdir(self._directory_fd) if name.endswith(".sock") and name != self._name
            ]
        return self._peers

    def listen(self, topic: str, on_wake: OnWake) -> None:
        self._listeners.add(topic, on_wake)

    def hearing(self) -> bool:
        return self._receiver is not None

    async def hear(self) -> bool:
        if self._receiver is not None:
            return True
        if not self._open_directory():
            return False
        receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            receiver.bind(self._path(self._name))
        except OSError as error:
            receiver.close()
            log.info("cannot listen for wake-ups in %s (%s): streams poll the store", self.directory, error)
            return False
        receiver.setblocking(False)
        asyncio.get_running_loop().add_reader(receiver.fileno(), self._receive)
        self._receiver = receiver
        return True

    def _receive(self) -> None:
        while self._receiver is not None:
            try:
                data = self._receiver.recv(MAX_KEY_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            self._listeners.deliver(data)

    async def close(self) -> None:
        if self._receiver is not None:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_reader(self._receiver.fileno())
            with contextlib.suppress(OSError):
                os.unlink(self._path(self._name))
            self._receiver.close()
            self._receiver = None
        if self._sender is not None:
            self._sender.close()
            self._sender = None
        if self._directory_fd is not None:
            os.close(self._directory_fd)
            self._directory_fd = None


CHANNEL = "durable_responses_wakeups"


class PostgresWakeups:
    """`NOTIFY` after a change, `LISTEN` on a connection of its own (asyncpg's listener).
    A notification is sent from the pool after the change committed, without waiting for it:
    the writer's latency does not grow. One still waiting for its connection stands for later
    ones of the same key (it is sent after their commits too), so a stream's appends in a burst
    cost one `NOTIFY`, not one each. Each payload names its process, which does not wake
    itself a second time."""

    def __init__(self, pool: Callable[[], Awaitable[Any]], connect: Callable[[], Awaitable[Any]]) -> None:
        self._pool = pool
        self._connect = connect
        self._connection: Any = None
        self._listeners = _Listeners()
        self._sending: set[asyncio.Task[None]] = set()
        self._unsent: set[str] = set()
        """Payloads whose `NOTIFY` has not gone out yet."""
        self._sender = secrets.token_hex(6)

    def publish(self, topic: str, key: str) -> None:
        message = _message(topic, key)
        if message is None:
            return
        payload = f"{self._sender}\n{message.decode()}"
        if payload in self._unsent:
            return
        self._unsent.add(payload)
        task = asyncio.get_running_loop().create_task(self._notify(payload))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _notify(self, payload: str) -> None:
        try:
            pool = await self._pool()
            async with pool.acquire() as connection:
                self._unsent.discard(payload)  # from here on, a later change needs a NOTIFY of its own
                await connection.execute("SELECT pg_notify($1, $2)", CHANNEL, payload)
        except Exception as error:  # noqa: BLE001 - the readers' poll finds the change anyway
            log.debug("wake-up not sent: %s", error)
        finally:
            self._unsent.discard(payload)

    def listen(self, topic: str, on_wake: OnWake) -> None:
        self._listeners.add(topic, on_wake)

    def hearing(self) -> bool:
        return self._connection is not None and not self._connection.is_closed()

    async def hear(self) -> bool:
        if self.hearing():
            return True
        connection = None
        try:
            connection = await self._connect()
            await connection.add_listener(CHANNEL, self._received)
        except Exception as error:  # noqa: BLE001 - polling still finds every change
            log.info("cannot LISTEN for wake-ups (%s): streams poll the store", error)
            if connection is not None:
                with contextlib.suppress(Exception):
                    await connection.close()
            return False
        self._connection = connection
        return True

    def _received(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        sender, _, message = payload.partition("\n")
        if sender != self._sender:
            self._listeners.deliver(message.encode())

    async def close(self) -> None:
        for task in list(self._sending):
            task.cancel()
        if self._connection is not None:
            with contextlib.suppress(Exception):
                await self._connection.close()
            self._connection = None
