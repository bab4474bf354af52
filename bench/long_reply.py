"""A long reply, a word a chunk, against the backend streaming it alone.

    python -m bench.long_reply [--words 420000]

The scripted backend streams `--words` words as one chunk each, first to a plain HTTP
client (the backend's own time), then to a background response on `durable-responses dev`,
polled every 0.2 s as a client waiting for it would. Prints both times and their ratio: the
goal (issue 25) is at most 3x. Before the fix, 200,000 words took 33 s and 420,000 did not
finish in 7 minutes: each poll folded the log's deltas with quadratic string building, and the
log kept one row per word.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import httpx
import openai

from bench.processes import Backend, Dev


def measure(words: int) -> tuple[float, float]:
    backend = Backend.start(0)
    reply = {"text": "word " * words, "chunk_chars": 5}
    try:
        backend.script("long", [reply])
        began = time.monotonic()
        with httpx.stream(
            "POST",
            f"{backend.base_url}/chat/completions",
            timeout=600,
            json={"model": "long", "stream": True, "messages": [{"role": "user", "content": "go"}]},
        ) as answer:
            for _ in answer.iter_bytes():
                pass
        direct = time.monotonic() - began
        backend.script("long", [reply])
        with tempfile.TemporaryDirectory() as data_dir:
            dev = Dev.start(data_dir, backend)
            try:
                client = openai.OpenAI(base_url=f"{dev.url}/v1", api_key="bench", timeout=600)
                began = time.monotonic()
                created = client.responses.create(model="long", input="go", background=True)
                while (current := client.responses.retrieve(created.id)).status in ("queued", "in_progress"):
                    time.sleep(0.2)
                durable = time.monotonic() - began
                assert current.status == "completed" and len(current.output_text) == 5 * words, current.status
            finally:
                dev.stop()
    finally:
        backend.stop()
    return direct, durable


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", type=int, default=420_000)
    args = parser.parse_args()
    direct, durable = measure(args.words)
    print(
        f"| {args.words:,} words, a word a chunk | backend {direct:.2f} s | background response {durable:.2f} s "
        f"| {durable / direct:.2f}x | goal <= 3x |"
    )


if __name__ == "__main__":
    main()
