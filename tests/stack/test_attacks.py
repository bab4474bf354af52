"""The tenant-isolation review's attacks, run again against `dev` as a tenant would run them
(`bench/attacks.py`: the same catalogue, where `python -m bench.attacks` measures against the
issue's goals of 100 ms and 150 MB): each ends as its limit says, `/livez` keeps answering
throughout, and the server's memory stays near where it started. The bounds here are looser
than the goals, for a shared CI machine, and still far below what the attacks cost before
(`/livez` held 16 s by 32 KB of blanks, 3.9 s by a filter; hundreds of MB for uploads)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.attacks import catalogue, run_all
from tests.support import memory
from tests.support.dev_stack import DevStack
from tests.support.scripted_backend import ScriptedBackend

LIVEZ_BOUND_MS = 1_000.0
MEMORY_BOUND_MIB = 150.0
EXPECTED = {
    "a word and 32,000 blanks, into a vector store": "completed",
    "a 2 KB PDF whose font map makes 256 characters a byte": "failed (invalid_file)",
    "22 KB of nested JSON (depth 11,000)": "failed (invalid_file)",
    "60 KB of unclosed HTML tags": "completed",
    "a 2 MiB text in 100-token chunks": "completed",
    "searches with the widest filters, and 200k- and 2M-value ones": "search 200, 200k-value filter 400, 2M-value 413",
    "100 made-up model names, compacted": "100 answered, 0 made-up names on /metrics",
    "a file deleted 0.4 s after it was added to a store": "0 chunks left after the delete",
}


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory, backend: ScriptedBackend) -> Iterator[DevStack]:
    stack = DevStack(tmp_path_factory.mktemp("attacked") / "data", backend)
    stack.start()
    yield stack
    stack.close()


@pytest.mark.timeout(600)
async def test_the_reviews_attacks_end_as_their_limits_say_and_stall_nobody(attacked: DevStack):
    before = memory.status(attacked.process.pid, "VmRSS") / 1024
    outcomes = await run_all(attacked.url, catalogue(attacked.data_dir / "responses.db", quick=True))
    grew = memory.status(attacked.process.pid, "VmRSS") / 1024 - before
    for outcome in outcomes:
        print(f"{outcome.attack}: {outcome.said}; /livez worst {outcome.livez.worst:.1f} ms")
    assert {outcome.attack: outcome.said for outcome in outcomes} == EXPECTED
    slowest = max(outcomes, key=lambda outcome: outcome.livez.worst)
    assert slowest.livez.worst < LIVEZ_BOUND_MS, (slowest.attack, slowest.livez.worst)
    assert grew < MEMORY_BOUND_MIB, f"the server grew {grew:.0f} MiB"
