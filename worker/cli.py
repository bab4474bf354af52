"""The `durable-responses` command: `dev`, `worker`, `serve`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from typing import Any

from worker.settings import DEFAULT_TASK_QUEUE, Settings

log = logging.getLogger("durable_responses")

STOP_MARGIN_SECONDS = 10.0
"""What a stopping process may take beyond SHUTDOWN_GRACE_SECONDS (the worker's own stop,
the Temporal child's) before what is left is cancelled."""


def _add_cluster_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--temporal-address", default=None, help="host:port of Temporal (default localhost:7233)")
    parser.add_argument("--namespace", default=None, help="Temporal namespace (default 'default')")
    parser.add_argument("--task-queue", default=None, help=f"Temporal task queue (default {DEFAULT_TASK_QUEUE!r})")
    parser.add_argument("--database-url", default=None, help="sqlite:///path or postgresql://...")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="durable-responses", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    dev = commands.add_parser("dev", help="Temporal dev server + worker + HTTP API, all local")
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument("--port", type=int, default=8000)
    dev.add_argument("--data-dir", default="./.durable-responses")
    dev.add_argument("--temporal-port", type=int, default=7233)
    dev.add_argument("--ui-port", type=int, default=None)

    worker = commands.add_parser("worker", help="run workflows and activities")
    _add_cluster_options(worker)

    serve = commands.add_parser("serve", help="the HTTP API only")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    _add_cluster_options(serve)

    approve = commands.add_parser("approve", help="approve (or deny) an MCP call a background response waits for")
    approve.add_argument("response_id")
    approve.add_argument("approval_request_id")
    approve.add_argument("--deny", action="store_true", help="deny the call instead of approving it")
    approve.add_argument("--reason", default=None, help="why (the model is told, on a denial)")
    approve.add_argument("--api-url", default=os.environ.get("DURABLE_RESPONSES_URL", "http://127.0.0.1:8000"),
                         help="the durable-responses API (default $DURABLE_RESPONSES_URL or http://127.0.0.1:8000)")
    return parser


def _approve(args: argparse.Namespace) -> int:
    """POST /v1/responses/{id}/approvals, so the API's checks apply; prints the response."""
    import httpx

    body = {"approval_request_id": args.approval_request_id, "approve": not args.deny}
    if args.reason is not None:
        body["reason"] = args.reason
    url = f"{args.api_url.rstrip('/')}/v1/responses/{args.response_id}/approvals"
    try:
        answer = httpx.post(url, json=body, timeout=60)
    except httpx.HTTPError as error:
        print(f"cannot reach {args.api_url}: {error}", file=sys.stderr)
        return 2
    if answer.status_code != 200:
        message = answer.json().get("error", {}).get("message", answer.text) if answer.content else answer.text
        print(f"refused ({answer.status_code}): {message}", file=sys.stderr)
        return 1
    response = answer.json()
    verb = "denied" if args.deny else "approved"
    print(f"{verb} {args.approval_request_id}; response {response['id']} is {response['status']}")
    return 0


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(
        temporal_address=args.temporal_address,
        namespace=args.namespace,
        task_queue=args.task_queue,
        database_url=args.database_url,
    )


async def _run(args: argparse.Namespace) -> int:
    from worker.dev import run_dev
    from worker.roles import run_api, run_worker

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    match args.command:
        case "dev":
            role = run_dev(args.host, args.port, args.data_dir, args.temporal_port, stop, ui_port=args.ui_port)
        case "worker":
            role = run_worker(_settings(args), stop)
        case _:
            role = run_api(_settings(args), args.host, args.port, stop, with_worker=False)
    return await _until_stopped(role, stop, Settings.from_env().shutdown_grace_seconds)


async def _until_stopped(role: Coroutine[Any, Any, Any], stop: asyncio.Event, grace_seconds: float) -> int:
    """Run a role until it ends; once `stop` is set, give it its grace and a margin to stop,
    then cancel it (its cleanup, such as stopping the Temporal child, still runs), so no stuck
    request or activity keeps the process from exiting."""
    running = asyncio.ensure_future(role)
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({running, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not running.done():
        done, _ = await asyncio.wait({running}, timeout=grace_seconds + STOP_MARGIN_SECONDS)
        if not done:
            log.error("still stopping %g s after the signal: cancelling what is left", grace_seconds + STOP_MARGIN_SECONDS)
            running.cancel()
            await asyncio.wait({running}, timeout=STOP_MARGIN_SECONDS)
            return 1
    return 0 if running.result() in (None, 0) else int(running.result())


def _event_loop_run(main_coroutine):  # noqa: ANN001, ANN202
    """uvloop where it is installed (Linux and macOS): ~15% less CPU per response than asyncio's
    own loop, measured with `bench/`."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main_coroutine)
    return uvloop.run(main_coroutine)


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.command == "approve":
        sys.exit(_approve(args))
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "INFO"), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # httpx2 (the MCP SDK's HTTP client) logs every request's URL at INFO, like httpx.
    for noisy in ("httpx", "httpx2", "transitions"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    code = _event_loop_run(_run(args))
    sys.stdout.flush()
    # The Temporal client can crash at interpreter exit (sdk-python #300): leave at once.
    os._exit(code)


if __name__ == "__main__":
    main()
