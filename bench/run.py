"""What durability costs, measured against the backend alone and the Temporal floor, in one run.

    python -m bench.run [--requests 200] [--latency-ms 0] [--quick]

Starts the scripted backend (its own process; ~2 ms a call), `durable-responses dev` on a
fresh data dir, and later a `serve` process, then measures:

1. non-streaming latency: a chat completion alone, then the same as a response, alternating;
2. time to the first text delta, through `dev` and through `serve` (another process);
3. throughput: 200 non-streaming responses at concurrency 10 and at 50, with the CPU time
   the `dev` process and its Temporal server used per response (read from /proc);
4. eight 30-turn `previous_response_id` chains: per-turn overhead at their start and end
   (the backend alone is given the same growing conversation), and the bytes the store
   keeps per turn;
5. the Temporal floor (`bench/floor.py`: an eager start, two empty local activities and the
   result) on the same Temporal server, and our overhead as a multiple of it;
6. overload: 200 responses at concurrency 50 while a CPU hog holds one core, with the
   upstream calls each response made (a response makes each inference call once);
7. an MCP turn (list, call, answer) against the same work done directly;
8. what telemetry costs (`bench/tracing.py`): three fresh `dev`s, untraced, traced with 10 %
   of traces sampled and with every trace, to a stand-in OTLP collector, in turn; and the
   metrics' own cost per response, timed in-process (`bench/telemetry_cost.py`);
9. a rate-limited backend (`bench/rate_limited.py`): responses lost, upstream calls per
   response, and one project's interactive latency while another floods it;
10. one stream's relay rate: words a second, the backend alone and through `dev`
    (`bench/relay.py`);
11. 10,000 responses waiting for approval on a fresh `dev`, then 20 (`bench/waiting.py`):
    memory, idle CPU, and an approval answered after its workflow left the cache;
12. the split deployment's first token hop by hop (`bench/hops.py`);
13. the tenant-isolation review's attacks (`bench/attacks.py`): each one's outcome and the
    worst `/livez` answer while it runs, and the server's memory after all;
14. code in containers (`bench/code_execution.py`): a cold container's first `print(1)`, a
    warm call's round trip, 20 containers computing at once with their memory and the server's.

It prints Markdown tables with the goals of issues 10 and 29 beside the figures. Timings vary by a
few ms from run to run on a shared machine; compare figures from the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import tempfile
import time
import uuid

import httpx
import openai
from openai.types.chat import ChatCompletionMessageParam

from bench import (
    attacks,
    canned,
    code_execution,
    docs,
    goals,
    hops,
    load,
    mcp_turn,
    moderation,
    peers,
    rate_limited,
    relay,
    telemetry_cost,
    tracing,
    waiting,
)
from bench.processes import (
    Backend,
    Dev,
    dev_cpu,
    measure_floor,
    start_cpu_hog,
    start_serve,
    stop,
)
from bench.tables import ms, row

CHAINS = 8


class Report:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def latency(self, name: str, direct: list[float], durable: list[float], goal: str) -> float:
        d50, d95, d99 = statistics.median(direct), load.percentile(direct, 0.95), load.percentile(direct, 0.99)
        r50, r95, r99 = statistics.median(durable), load.percentile(durable, 0.95), load.percentile(durable, 0.99)
        self.lines.append(
            row(
                [
                    name,
                    f"{ms(d50)} / {ms(d95)} / {ms(d99)}",
                    f"{ms(r50)} / {ms(r95)} / {ms(r99)}",
                    f"{r50 - d50:+.1f} / {r95 - d95:+.1f} / {r99 - d99:+.1f} ms",
                    f"{r50 / d50:.2f}x",
                    goal,
                ]
            )
        )
        return r50 - d50


async def run(args: argparse.Namespace) -> str:
    requests, warmup = args.requests, max(10, args.requests // 10)
    backend = Backend.start(args.latency_ms)
    report = Report()
    with tempfile.TemporaryDirectory(prefix="dr-bench-") as data_dir:
        dev = Dev.start(data_dir, backend)
        serve = None
        try:
            direct = openai.AsyncOpenAI(base_url=backend.base_url, api_key="bench", max_retries=0, timeout=120)
            durable = openai.AsyncOpenAI(base_url=f"{dev.url}/v1", api_key="bench", max_retries=0, timeout=300)
            http = httpx.AsyncClient(timeout=120)
            hi: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]

            # 1. non-streaming, sequential
            plain_direct, plain_durable = await load.alternating(
                lambda: direct.chat.completions.create(model="bench", messages=hi),
                lambda: durable.responses.create(model="bench", input="hi"),
                requests,
                warmup,
            )

            # 2. first delta through dev
            delta_direct = load.backend_first_delta(http, backend.base_url)
            delta_dev = load.response_first_delta(http, f"{dev.url}/v1/responses")
            first_direct, first_dev = await load.alternating_first_delta(delta_direct, delta_dev, requests, warmup)
            # 2c. the first delta as the openai SDK measures it, and the canned floor (issue 61)
            first_sdk = await load.alternating_first_delta(
                load.sdk_backend_first_delta(direct), load.sdk_response_first_delta(durable), requests, warmup
            )
            canned_ms = await canned.floor_ms(f"{dev.url}/v1", "bench", requests, warmup)
            # 2a. first delta through dev over one WebSocket connection (WebSocket mode)
            delta_socket = load.WebSocketFirstDelta(
                dev.url.replace("http", "ws", 1) + "/v1/responses", {"model": "bench", "input": "hi"}
            )
            try:
                socket_direct, first_socket = await load.alternating_first_delta(
                    delta_direct, delta_socket, requests, warmup
                )
            finally:
                await delta_socket.close()

            # 3. throughput
            loads = {}
            for concurrency in (10, 50):
                await load.concurrently(lambda: durable.responses.create(model="bench", input="hi"), 40, concurrency)
                loads[concurrency] = await load.concurrently(
                    lambda: durable.responses.create(model="bench", input="hi"),
                    200,
                    concurrency,
                    dev_cpu(dev, backend),
                )

            # 4. a 30-turn chain, eight times (fewer chains leave the per-turn medians noisy)
            chains = [
                await load.chain(durable, http, backend.base_url, f"bench-chain-{index}", args.turns)
                for index in range(CHAINS)
            ]
            database = os.path.join(data_dir, "responses.db")
            stored = [[load.stored_bytes(database, response_id) for response_id in ids] for _, _, ids in chains]

            # 5. the Temporal floor, on the same server
            floor = measure_floor(dev, requests // 2)

            # 6. overload: a CPU hog holds one core
            model = f"bench-overload-{uuid.uuid4().hex[:6]}"
            hog = start_cpu_hog()
            try:
                overload = await load.concurrently(lambda: durable.responses.create(model=model, input="hi"), 200, 50)
            finally:
                hog.kill()
                hog.wait()
            upstream_calls = backend.calls().get(model, 0)

            # 2b. first delta through serve (another process)
            serve, serve_url = start_serve(dev, backend)
            delta_serve = load.response_first_delta(http, f"{serve_url}/v1/responses")
            serve_direct, serve_first = await load.alternating_first_delta(
                delta_direct, delta_serve, requests // 2, warmup
            )

            # 7. an MCP turn
            mcp_direct, mcp_durable = await mcp_turn.measure(backend, durable, direct, requests // 4, warmup // 2)
            # 7a. an output `block` moderation policy on one stream
            moderated = await moderation.measure(http, dev.url, backend, requests // 2, warmup)
            await http.aclose()
        finally:
            if serve is not None:
                stop(serve)
            dev.stop()
        try:
            # 15. the peers, on the same backend, with dev stopped (`bench/peers.py`)
            peer_figures = [] if args.skip_peers else await peers.measure_all(backend, requests, warmup)
            # 8. telemetry
            tracing_figures = await tracing.measure(backend, requests, warmup)
            metrics_cost = await telemetry_cost.measure()
            # 10. one stream's relay rate
            relayed = await asyncio.to_thread(relay.measure, args.relay_words, 3, backend)
        finally:
            backend.stop()
    # 12. the split deployment's first token, hop by hop
    hop_rows = await hops.measure(max(30, requests // 2))
    # 11. responses waiting for approval: many, and a few (the idle cost must not follow the count)
    waits = (
        []
        if not args.waiting
        else [await asyncio.to_thread(waiting.measure, count, idle_seconds=20) for count in (args.waiting, 20)]
    )
    # 9. a rate-limited backend (its own backends and `dev`s)
    limited = "" if args.skip_rate_limited else await rate_limited.measure()
    # 13. the tenant-isolation review's attacks (their own backend and `dev`)
    attacked = await attacks.measure(quick=args.quick)
    # 14. code in containers (`bench/code_execution.py`: its own backend and `dev`)
    coded = await code_execution.measure(20 if args.quick else 40)

    lines = [
        f"durable-responses benchmark: {os.cpu_count()} cores, scripted backend "
        f"(+{args.latency_ms:g} ms), {requests} requests a latency row, one run",
        "",
        row(["latency (p50 / p95 / p99)", "backend alone", "durable-responses", "overhead", "ratio p50", "goal"]),
        row(["---"] * 6),
    ]
    plain_overhead = report.latency("non-streaming", plain_direct, plain_durable, "≤ +20 / +30 ms")
    report.latency("first text delta, `dev`", first_direct, first_dev, "≤ +12 ms p50")
    report.latency("first text delta, `dev`, WebSocket mode", socket_direct, first_socket, "")
    report.latency("first text delta, `serve` (another process)", serve_direct, serve_first, "")
    report.latency("an MCP turn: list, call, answer", mcp_direct, mcp_durable, "")
    lines += report.lines
    lines += ["", *moderation.lines(moderated)]

    lines += [
        "",
        row(
            [
                "throughput, 200 non-streaming",
                "req/s",
                "p50",
                "p95",
                "p99",
                "p95 / p50",
                "errors",
                "CPU per response: `dev` / Temporal",
                "goal",
            ]
        ),
        row(["---"] * 9),
    ]
    for concurrency, goal in ((10, "≥ 55 req/s, p95 ≤ 3× p50, CPU ≤ 15 ms"), (50, "≥ 50 req/s, p95 ≤ 3× p50")):
        result = loads[concurrency]
        lines.append(
            row(
                [
                    f"concurrency {concurrency}",
                    f"{result.throughput:.1f}",
                    ms(result.p50),
                    ms(result.p95),
                    ms(result.p99),
                    f"{result.p95 / result.p50:.2f}",
                    str(sum(result.errors.values())),
                    f"{result.cpu.server:.1f} ms / {result.cpu.temporal:.1f} ms",
                    goal,
                ]
            )
        )

    per_turn = [statistics.median(chain[1][turn] - chain[0][turn] for chain in chains) for turn in range(args.turns)]
    head, tail = statistics.median(per_turn[:5]), statistics.median(per_turn[-5:])
    bytes_per_turn = [statistics.median(each[turn] for each in stored) for turn in range(args.turns)]
    lines += [
        "",
        row(
            [
                f"{args.turns}-turn chain ({CHAINS} chains)",
                "overhead turns 1–5",
                f"overhead turns {args.turns - 4}–{args.turns}",
                "end / start",
                "bytes stored: turn 1 / 15 / 30",
                "goal",
            ]
        ),
        row(["---"] * 6),
    ]
    lines.append(
        row(
            [
                "`previous_response_id`",
                ms(head),
                ms(tail),
                f"{tail / head:.2f}x",
                " / ".join(f"{bytes_per_turn[min(turn, args.turns) - 1]:,.0f}" for turn in (1, 15, 30)),
                "end ≤ 1.2× start",
            ]
        )
    )

    lines += [
        "",
        row(
            [
                "Temporal floor (same server)",
                "p50",
                "p95",
                "req/s at 10",
                "req/s at 50",
                "our overhead p50 / floor p50",
                "goal",
            ]
        ),
        row(["---"] * 7),
    ]
    for name in ("unsandboxed", "sandboxed"):
        figures = floor[name]
        lines.append(
            row(
                [
                    f"eager start + 2 empty local activities + result, {name}",
                    ms(figures["p50_ms"]),
                    ms(figures["p95_ms"]),
                    f"{figures['by_concurrency']['10']['throughput_per_s']:.1f}",
                    f"{at_50['throughput_per_s']:.1f}" if (at_50 := figures["by_concurrency"].get("50")) else "",
                    f"{plain_overhead / figures['p50_ms']:.2f}x",
                    "≤ 1.3×" if name == "unsandboxed" else "",
                ]
            )
        )

    accepted = sum(overload.statuses.values())
    lines += [
        "",
        row(
            [
                "overload: 200 at concurrency 50, a CPU hog on one core",
                "completed",
                "shed (429/503)",
                "other errors",
                "upstream calls per response",
                "p50",
                "p95",
                "goal",
            ]
        ),
        row(["---"] * 8),
    ]
    shed = overload.errors.get("429", 0) + overload.errors.get("503", 0)
    lines.append(
        row(
            [
                "non-streaming",
                str(overload.statuses.get("completed", 0)),
                str(shed),
                str(sum(overload.errors.values()) - shed),
                f"{upstream_calls / max(1, accepted):.3f}",
                ms(overload.p50),
                ms(overload.p95),
                "≤ 1.05 calls per response",
            ]
        )
    )

    lines += ["", *tracing.rows(tracing_figures, metrics_cost)]
    if limited:
        lines += ["", limited]
    lines += [
        "",
        *goals.issue_42_rows(
            (plain_direct, plain_durable),
            (first_direct, first_dev),
            loads,
            floor["unsandboxed"],
            peer_figures,
        ),
        "",
        *goals.issue_61_rows(
            peers.PeerFigures("durable-responses", first=(first_direct, first_dev), first_sdk=first_sdk),
            canned_ms,
            peer_figures,
        ),
        "",
        *goals.issue_29_rows(first_direct, first_dev, serve_direct, serve_first, loads[10], relayed, waits),
        "",
        *hops.table(hop_rows),
        "",
        attacked,
        "",
        coded,
        "",
        "A burst of 10,000 responses waiting for approval (issue 61's goals) is a benchmark of its own, about",
        '15 minutes on a quiet machine: `python -m bench.burst` (its last figures: docs/benchmarks.md, "A burst").',
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200, help="samples per latency row (default 200)")
    parser.add_argument("--latency-ms", type=float, default=0.0, help="added backend latency (default 0)")
    parser.add_argument("--turns", type=int, default=30, help="turns of the chain (default 30)")
    parser.add_argument("--quick", action="store_true", help="60 samples a row: a rough figure in a minute or two")
    parser.add_argument("--relay-words", type=int, default=100_000, help="words of the relay row's stream")
    parser.add_argument(
        "--waiting",
        type=int,
        default=10_000,
        help="responses left waiting for approval (default 10,000: about 10 minutes; 0 leaves it out)",
    )
    parser.add_argument(
        "--write-docs",
        action="store_true",
        help="write the figures into docs/benchmarks.md and the README's goals table (bench/docs.py)",
    )
    parser.add_argument(
        "--skip-peers",
        action="store_true",
        help="leave out llama-stack and OGX (bench/peers.py; their first run installs them, a few minutes)",
    )
    parser.add_argument(
        "--skip-rate-limited",
        action="store_true",
        help="leave out the rate-limited backend's scenarios (about 90 s; `python -m bench.rate_limited`)",
    )
    args = parser.parse_args()
    logging.disable(logging.INFO)  # the MCP client's per-request lines
    if args.quick:
        args.requests, args.waiting = 60, min(args.waiting, 1000)
    started = time.monotonic()
    table = asyncio.run(run(args))
    seconds = time.monotonic() - started
    print(table)
    print(f"\n(measured in {seconds:.0f} s)", flush=True)
    if args.write_docs:
        for page in docs.write(table, seconds):
            print(f"written into {page}", flush=True)
    os._exit(0)  # the Temporal client can crash at interpreter exit (sdk-python #300)


if __name__ == "__main__":
    main()
