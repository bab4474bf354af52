"""A file's reader runs in a process of its own, within its limits: what goes past one fails
the file clearly (never retried), and the process is gone afterwards. Real processes, no
stack."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest

from file_search.limits import LIMITS
from file_search.reader import read_chunks
from models.errors import UnreadableFileError
from sandbox.limits import ResourceLimits
from tests.support.house import modules_loaded_by
from tests.support.waiting import eventually


async def parts_of(data: bytes, pause: float = 0.0) -> AsyncIterator[bytes]:
    for start in range(0, len(data), 1 << 20):
        yield data[start : start + (1 << 20)]
        await asyncio.sleep(pause)


async def read_all(filename: str, data: bytes, **limits: object) -> list[str]:
    reader = replace(LIMITS.reader, **limits)  # type: ignore[arg-type]
    texts: list[str] = []
    async for batch in read_chunks(filename, parts_of(data), 100, 50, replace(LIMITS, reader=reader)):
        texts.extend(chunk.text for chunk in batch)
    return texts


def our_readers() -> list[int]:
    """The `file_search.reader_main` processes this test process started (alive or unreaped)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if b"file_search.reader_main" not in cmdline.read():
                    continue
            with open(f"/proc/{pid}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == os.getpid():
            found.append(int(pid))
    return found


def no_reader_left() -> bool:
    return not our_readers()


async def test_a_file_is_read_into_chunks_in_order():
    words = [f"word{n}" for n in range(3000)]
    texts = await read_all("words.txt", " ".join(words).encode())
    assert texts[0].split()[0] == "word0" and texts[-1].split()[-1] == "word2999"
    assert no_reader_left()


async def test_a_reader_that_needs_more_memory_than_it_may_fails_the_file():
    with pytest.raises(UnreadableFileError) as refused:
        await read_all("large.txt", b"word " * (6 * 1024 * 1024), memory_bytes=160 * 1024 * 1024)
    assert refused.value.code == "invalid_file" and "MiB of memory" in refused.value.message
    assert no_reader_left()


async def test_a_reader_past_its_cpu_time_is_stopped_and_fails_the_file():
    with pytest.raises(UnreadableFileError) as refused:
        await read_all("long.txt", b"word " * (6 * 1024 * 1024), cpu_seconds=1)
    assert "of CPU" in refused.value.message
    assert no_reader_left()


async def test_a_reader_past_its_wall_clock_time_is_killed():
    async def never_ending() -> AsyncIterator[bytes]:
        yield b"some words"
        await asyncio.sleep(3600)

    limits = replace(LIMITS, reader=ResourceLimits(wall_seconds=1.0))
    with pytest.raises(UnreadableFileError) as refused:
        async for _ in read_chunks("slow.txt", never_ending(), 100, 50, limits):
            pass
    assert "took longer than" in refused.value.message
    assert no_reader_left()


async def test_a_reader_whose_output_is_too_large_is_stopped():
    with pytest.raises(UnreadableFileError) as refused:
        await read_all("many.txt", b"word " * 100_000, output_bytes=4096)
    assert "more text than" in refused.value.message
    assert no_reader_left()


async def test_a_reader_left_early_is_killed():
    batches = read_chunks("words.txt", parts_of(b"word " * 200_000), 100, 50)
    async for _ in batches:
        break
    await batches.aclose()
    assert no_reader_left()


async def test_a_reader_killed_from_outside_is_worth_another_try():
    from file_search.reader import ReaderStoppedError

    async def killing() -> AsyncIterator[bytes]:
        yield b"word " * 1000
        # The reader is there once its command line says so: on a loaded machine it may still
        # be between fork and exec when the first bytes are taken (then none was killed).
        readers = await eventually(our_readers, "the reader to be running", seconds=60, poll_seconds=0.02)
        for pid in readers:  # as the system's out-of-memory killer would
            os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(3600)

    with pytest.raises(ReaderStoppedError):
        async for _ in read_chunks("killed.txt", killing(), 100, 50):
            pass
    assert no_reader_left()


def test_a_reader_imports_only_what_reading_needs():
    """Each file pays its reader's start: the request models (pydantic, 0.16 s of a 0.2 s start
    when the reader imported them) stay out of it."""
    listed = modules_loaded_by("file_search.reader_main")
    heavy = [name for name in listed if name.split(".")[0] in ("pydantic", "pydantic_core", "openai", "temporalio")]
    assert heavy == []
    assert "models.vector_stores" not in listed


async def test_a_reader_runs_this_code_whatever_the_working_directory_holds(tmp_path, monkeypatch):
    """Started from a directory that holds a package of the same name (another checkout, say),
    the reader is still this process's."""
    decoy = tmp_path / "file_search"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("")
    (decoy / "reader_main.py").write_text("print('[\"the decoy\\'s chunk\", 3]')\nprint('{\"chunks\": 1}')\n")
    monkeypatch.chdir(tmp_path)
    assert await read_all("real.txt", b"the real words") == ["the real words"]
