"""A 100-turn `previous_response_id` chain, with compaction on and without it.

    python -m bench.compaction [--turns 100] [--threshold 1500]

After a 20-turn warm-up chain, each turn sends about 60 words; the scripted backend echoes
them. Without compaction the
context (what each turn sends upstream) grows with every turn; with
`context_management: [{"type": "compaction", "compact_threshold": N}]` it is summarised
whenever it passes N tokens, so what a turn sends, what it costs and what the store keeps
stay flat. Prints, for both chains: the median time of turns 1–10 and of the last ten,
their ratio, the tokens the last turn sent upstream (the backend's own count), the bytes the
store keeps for the first and the last response, and how many compactions ran.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import httpx
import openai

from bench.load import stored_bytes
from bench.processes import Backend, Dev
from tests.scripted_backend import reference_tokens

WORDS = "the cat sat on a mat and then ran far away from our big red dog who was not fast".split()


def chain(client: openai.OpenAI, backend: Backend, model: str, turns: int,
          threshold: int | None, database: str) -> dict:
    previous = None
    seconds, stored, compactions = [], [], 0
    extra = {"context_management": [{"type": "compaction", "compact_threshold": threshold}]} if threshold else {}
    for turn in range(turns):
        text = f"turn {turn}: " + " ".join(WORDS[index % len(WORDS)] for index in range(60))
        began = time.perf_counter()
        response = client.responses.create(model=model, input=text, previous_response_id=previous, **extra)
        seconds.append(time.perf_counter() - began)
        assert response.status == "completed", response.error
        compactions += sum(1 for item in response.output if item.type == "compaction")
        stored.append(stored_bytes(database, response.id))
        previous = response.id
    sent = httpx.get(f"{backend.base_url}/_requests", params={"model": model}, timeout=30).json()
    return {"head": statistics.median(seconds[:10]) * 1000, "tail": statistics.median(seconds[-10:]) * 1000,
            "last_tokens": reference_tokens(sent[-1]), "first_bytes": stored[0], "last_bytes": stored[-1],
            "compactions": compactions}


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
                chain(client, backend, "warm-up", 20, None, database)  # the first requests of a process are slower
                rows = [("without compaction", chain(client, backend, "plain", args.turns, None, database)),
                        (f"compact_threshold {args.threshold}",
                         chain(client, backend, "compacting", args.turns, args.threshold, database))]
            finally:
                dev.stop()
    finally:
        backend.stop()
    print(f"| {args.turns}-turn chain | turns 1–10 | last 10 | last / first | tokens sent by the last turn "
          "| bytes stored: first / last response | compactions |")
    print("|---|---|---|---|---|---|---|")
    for name, row in rows:
        print(f"| {name} | {row['head']:.1f} ms | {row['tail']:.1f} ms | {row['tail'] / row['head']:.2f}x "
              f"| {row['last_tokens']:,} | {row['first_bytes']:,} / {row['last_bytes']:,} | {row['compactions']} |")
    os._exit(0)  # the Temporal client can crash at interpreter exit (sdk-python #300)


if __name__ == "__main__":
    main()
