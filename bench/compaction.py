"""A 100-turn `previous_response_id` chain, with compaction on and without it, side by side.

    python -m bench.compaction [--turns 100] [--threshold 1500]

After a 20-turn warm-up chain, two chains run turn by turn in alternation (so both see the
same machine, the same store growing, the same noise): each turn sends about 60 words and the
scripted backend echoes them. Without compaction the context (what each turn sends upstream)
grows with every turn; with `context_management: [{"type": "compaction", "compact_threshold":
N}]` it is summarised whenever it passes N tokens, so what a turn sends, what it costs and
what the store keeps stay flat. Prints, for both chains: the median time of turns 1–10 and
of the last ten, their ratio, the tokens the last turn sent upstream (the backend's own
count), the bytes the store keeps for the first and the last response, and how many
compactions ran.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field

import httpx
import openai
from openai import Omit, omit
from openai.types.responses.response_create_params import ContextManagement

from bench.load import stored_bytes
from bench.processes import Backend, Dev
from tests.support.scripted_backend import reference_tokens

WORDS = "the cat sat on a mat and then ran far away from our big red dog who was not fast".split()


@dataclass
class Chain:
    model: str
    threshold: int | None
    previous: str | None = None
    milliseconds: list[float] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    compactions: int = 0

    def turn(self, client: openai.OpenAI, turn: int) -> None:
        text = f"turn {turn}: " + " ".join(WORDS[index % len(WORDS)] for index in range(60))
        management: list[ContextManagement] | Omit = (
            [{"type": "compaction", "compact_threshold": self.threshold}] if self.threshold else omit
        )
        began = time.perf_counter()
        response = client.responses.create(
            model=self.model, input=text, previous_response_id=self.previous, context_management=management
        )
        self.milliseconds.append((time.perf_counter() - began) * 1000)
        assert response.status == "completed", response.error
        self.compactions += sum(1 for item in response.output if item.type == "compaction")
        self.ids.append(response.id)
        self.previous = response.id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--threshold", type=int, default=1500)
    args = parser.parse_args()
    backend = Backend.start(0)
    try:
        with tempfile.TemporaryDirectory() as data_dir:
            dev = Dev.start(data_dir, backend)
            try:
                client = openai.OpenAI(base_url=f"{dev.url}/v1", api_key="bench", timeout=120)
                database = os.path.join(data_dir, "responses.db")
                warm_up = Chain("warm-up", None)  # the first requests of a process are slower
                for turn in range(20):
                    warm_up.turn(client, turn)
                chains = {
                    "without compaction": Chain("plain", None),
                    f"compact_threshold {args.threshold}": Chain("compacting", args.threshold),
                }
                for turn in range(args.turns):
                    for chain in chains.values():
                        chain.turn(client, turn)
                # (read once the chains are done: a reader beside the server slows it, as its
                # WAL cannot be checkpointed meanwhile)
                stored = {
                    name: (stored_bytes(database, chain.ids[0]), stored_bytes(database, chain.ids[-1]))
                    for name, chain in chains.items()
                }
            finally:
                dev.stop()
        sent = {
            chain.model: httpx.get(f"{backend.base_url}/_requests", params={"model": chain.model}, timeout=30).json()[
                -1
            ]
            for chain in chains.values()
        }
    finally:
        backend.stop()
    print(
        f"| {args.turns}-turn chain, two in alternation | turns 1–10 | last 10 | last / first "
        "| tokens sent by the last turn | bytes stored: first / last response | compactions |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, chain in chains.items():
        head, tail = statistics.median(chain.milliseconds[:10]), statistics.median(chain.milliseconds[-10:])
        print(
            f"| {name} | {head:.1f} ms | {tail:.1f} ms | {tail / head:.2f}x | {reference_tokens(sent[chain.model]):,} "
            f"| {stored[name][0]:,} / {stored[name][1]:,} | {chain.compactions} |"
        )
    os._exit(0)  # the Temporal client can crash at interpreter exit (sdk-python #300)


if __name__ == "__main__":
    main()
