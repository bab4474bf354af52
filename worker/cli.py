"""durable-responses: an OpenAI-compatible Responses API in which every response is a durable
Temporal workflow.

  dev       everything on this machine: a Temporal dev server, a worker and the HTTP API
            (the built-in demo model answers until an inference backend is configured)
  serve     the HTTP API only, for a deployment with separate workers
  worker    runs responses (workflows and activities) from a Temporal task queue
  approve   approve or deny an MCP tool call a background response waits for
  keys      make, list and revoke API keys (each belongs to a project)

The inference backend and everything else not given as a flag come from the environment
(INFERENCE_BASE_URL, INFERENCE_API_KEY, ...; see the README's configuration table).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.errors import StartupError
from telemetry.logs import configure_logging, say
from telemetry.tracing import configure_tracing
from worker.defaults import DEFAULT_TASK_QUEUE, database_url_from_env
from worker.shutdown import Shutdown

if TYPE_CHECKING:  # the whole configuration is imported by the roles that run, not by `keys`
    from worker.settings import Settings

log = logging.getLogger("durable_responses")

STOP_MARGIN_SECONDS = 10.0
"""What a stopping process may take beyond SHUTDOWN_GRACE_SECONDS (the worker's own stop,
the Temporal child's) before what is left is cancelled."""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """Descriptions as written; an option's default after its help, unless the help says it
    (a default that comes from the environment) or it is a switch."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False) or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def _command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], name: str, summary: str, description: str
) -> argparse.ArgumentParser:
    return commands.add_parser(name, help=summary, description=description, formatter_class=_HelpFormatter)


def _add_cluster_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--temporal-address",
        default=None,
        metavar="HOST:PORT",
        help="the Temporal frontend (default: from the Temporal client configuration, "
        "$TEMPORAL_ADDRESS or a $TEMPORAL_PROFILE of $TEMPORAL_CONFIG_FILE, else localhost:7233; "
        "TLS and API keys come from there too)",
    )
    parser.add_argument(
        "--namespace",
        default=None,
        help="the Temporal namespace (default: $TEMPORAL_NAMESPACE or the profile's, else 'default')",
    )
    parser.add_argument(
        "--task-queue",
        default=None,
        help=f"the Temporal task queue (default: $TEMPORAL_TASK_QUEUE or {DEFAULT_TASK_QUEUE!r})",
    )
    parser.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help="sqlite:///PATH or postgresql://USER:PASSWORD@HOST/DB "
        "(default: $DATABASE_URL or sqlite:///./.durable-responses/responses.db)",
    )


def _add_models_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--models-file",
        default=os.environ.get("MODELS_FILE") or None,
        metavar="PATH",
        help="the model registry, in LiteLLM proxy's config format: which deployments serve which "
        "model names, their rpm/tpm and fallbacks ($MODELS_FILE when set; without it, "
        "INFERENCE_BASE_URL serves every model name)",
    )


def _add_http_options(parser: argparse.ArgumentParser, *, from_environment: bool = False) -> None:
    """`serve` also takes $HOST and $PORT (as platforms set them); `dev` does not, since some
    shells set $HOST to the machine's name."""
    if from_environment:
        parser.add_argument(
            "--host",
            default=os.environ.get("HOST", "127.0.0.1"),
            help="the address the HTTP API listens on ($HOST when set)",
        )
        parser.add_argument(
            "--port", type=int, default=os.environ.get("PORT", "8000"), help="the HTTP API's port ($PORT when set)"
        )
        return
    parser.add_argument("--host", default="127.0.0.1", help="the address the HTTP API listens on")
    parser.add_argument("--port", type=int, default=8000, help="the HTTP API's port")


def _add_store_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--data-dir", default=None, help="the store of `dev --data-dir DIR`")
    where.add_argument(
        "--database-url",
        default=None,
        metavar="URL",
        help="the store of `serve` (default: $DATABASE_URL or sqlite:///./.durable-responses/responses.db)",
    )


def _store_url(args: argparse.Namespace) -> str:
    if args.data_dir is not None:
        return f"sqlite:///{Path(args.data_dir).resolve() / 'responses.db'}"
    return args.database_url or database_url_from_env()


def _add_open_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--open",
        action="store_true",
        dest="allow_open",
        help="run without API keys on a non-loopback --host (anyone who reaches it may use it); "
        "also ALLOW_OPEN=true. Once a key exists, keys are required anyway",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="durable-responses", description=__doc__, formatter_class=_HelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", help="what to run")

    dev = _command(
        commands,
        "dev",
        "Temporal dev server + worker + HTTP API, all local",
        "Start a Temporal dev server (a child process), a worker and the HTTP API, with their data in "
        "--data-dir, and the demo MCP tools at /demo/mcp.\nWith no INFERENCE_BASE_URL and no "
        "INFERENCE_API_KEY/OPENAI_API_KEY set (or with --demo), the built-in demo model answers.",
    )
    _add_http_options(dev)
    dev.add_argument(
        "--data-dir",
        default="./.durable-responses",
        help="where the responses, Temporal's history and the secrets key are kept",
    )
    dev.add_argument("--temporal-port", type=int, default=7233, help="the Temporal dev server's gRPC port")
    dev.add_argument(
        "--ui-port",
        type=int,
        default=None,
        help="the Temporal UI's port (default: the first free one from --temporal-port + 1000)",
    )
    dev.add_argument(
        "--demo",
        action="store_true",
        help="answer with the built-in demo model even if an inference backend is configured",
    )
    _add_models_option(dev)
    _add_open_option(dev)

    worker = _command(
        commands,
        "worker",
        "run responses (workflows and activities)",
        "Poll a Temporal task queue and run responses: the model calls, MCP tool calls and the "
        "store writes. Run as many as you need.",
    )
    _add_cluster_options(worker)
    _add_models_option(worker)
    worker.add_argument(
        "--health-port",
        type=int,
        default=os.environ.get("WORKER_HEALTH_PORT"),
        help="serve /livez and /readyz on this port, on every address ($WORKER_HEALTH_PORT when set; none by default)",
    )

    serve = _command(
        commands,
        "serve",
        "the HTTP API only",
        "Serve the HTTP API; responses run on `worker` processes of the same task queue.",
    )
    _add_http_options(serve, from_environment=True)
    _add_cluster_options(serve)
    _add_models_option(serve)
    _add_open_option(serve)

    keys = _command(
        commands,
        "keys",
        "make, list and revoke API keys",
        "API keys, kept (hashed) in the store. Once any key exists, every request needs one "
        "(Authorization: Bearer KEY); running servers see new and revoked keys within seconds.",
    )
    key_commands = keys.add_subparsers(
        dest="keys_command", required=True, metavar="ACTION", help="create, list or revoke"
    )
    create = key_commands.add_parser(
        "create",
        help="make a key for a project and print it once",
        description="Make a key for a project; the key is printed once, on stdout.",
        formatter_class=_HelpFormatter,
    )
    create.add_argument("--project", required=True, help="the project (tenant) the key's requests act for")
    create.add_argument(
        "--approver",
        action="store_true",
        help="an approve-only key: it may read its project's waiting responses and decide approvals, nothing else",
    )
    _add_store_options(create)
    listing = key_commands.add_parser(
        "list",
        help="list the keys (never the keys themselves)",
        description="List the keys: id, first characters, project, role, state.",
        formatter_class=_HelpFormatter,
    )
    _add_store_options(listing)
    revoke = key_commands.add_parser(
        "revoke", help="revoke a key", description="Revoke a key by its id.", formatter_class=_HelpFormatter
    )
    revoke.add_argument("key_id", metavar="KEY_ID", help="the key's id (key_...), as `keys list` shows it")
    _add_store_options(revoke)

    approve = _command(
        commands,
        "approve",
        "approve (or deny) an MCP call a background response waits for",
        "Answer an MCP approval request of a background response that waits for it "
        "(POST /v1/responses/RESPONSE_ID/approvals).",
    )
    approve.add_argument("response_id", metavar="RESPONSE_ID", help="the waiting response (resp_...)")
    approve.add_argument(
        "approval_request_id", metavar="APPROVAL_REQUEST_ID", help="the id of its mcp_approval_request item (mcpr_...)"
    )
    approve.add_argument("--deny", action="store_true", help="deny the call instead of approving it")
    approve.add_argument("--reason", default=None, help="why (the model is told, on a denial)")
    approve.add_argument(
        "--api-url",
        default=os.environ.get("DURABLE_RESPONSES_URL", "http://127.0.0.1:8000"),
        help="the durable-responses API ($DURABLE_RESPONSES_URL when set)",
    )
    approve.add_argument(
        "--api-key",
        default=None,
        help="an API key of the response's project, full or approver "
        "(default: $DURABLE_RESPONSES_API_KEY; never $OPENAI_API_KEY, which is another "
        "server's key)",
    )
    return parser


def _approve(args: argparse.Namespace) -> int:
    """POST /v1/responses/{id}/approvals, so the API's checks apply; prints the response."""
    import httpx

    body = {"approval_request_id": args.approval_request_id, "approve": not args.deny}
    if args.reason is not None:
        body["reason"] = args.reason
    url = f"{args.api_url.rstrip('/')}/v1/responses/{args.response_id}/approvals"
    key = args.api_key or os.environ.get("DURABLE_RESPONSES_API_KEY")
    headers = {"authorization": f"Bearer {key}"} if key else {}
    try:
        answer = httpx.post(url, json=body, headers=headers, timeout=60)
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


def _keys(args: argparse.Namespace) -> int:
    from access.commands import run_keys_command

    try:
        return asyncio.run(
            run_keys_command(
                args.keys_command,
                _store_url(args),
                project=getattr(args, "project", None),
                approver=getattr(args, "approver", False),
                key_id=getattr(args, "key_id", None),
            )
        )
    except StartupError as error:
        print(f"durable-responses keys: {error}", file=sys.stderr)
        return 1


def _settings(args: argparse.Namespace) -> Settings:
    from worker.settings import Settings

    return Settings.from_env(
        temporal_address=args.temporal_address,
        namespace=args.namespace,
        task_queue=args.task_queue,
        database_url=args.database_url,
        models_file=args.models_file,
    )


async def _run(args: argparse.Namespace) -> int:
    from worker.roles import run_api, run_worker
    from worker.settings import Settings

    shutdown = Shutdown()
    grace_seconds = Settings.from_env().shutdown_grace_seconds
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, _on_signal, shutdown, grace_seconds)
    role: Coroutine[Any, Any, Any]
    match args.command:
        case "dev":
            from worker.dev import run_dev  # with dev's demo MCP server: the other roles need neither

            role = run_dev(
                args.host,
                args.port,
                args.data_dir,
                args.temporal_port,
                shutdown,
                ui_port=args.ui_port,
                demo=args.demo,
                allow_open=args.allow_open,
                models_file=args.models_file,
            )
        case "worker":
            settings = _settings(args)
            if args.health_port:
                settings = settings.model_copy(update={"worker_health_port": args.health_port})
            role = run_worker(settings, shutdown)
        case _:
            settings = _settings(args)
            if args.allow_open:
                settings = settings.model_copy(update={"allow_open": True})
            role = run_api(settings, args.host, args.port, shutdown, with_worker=False)
    return await _until_stopped(role, shutdown, grace_seconds)


def _on_signal(shutdown: Shutdown, grace_seconds: float) -> None:
    """The first signal asks to stop and says what that waits for; the second forces it."""
    if shutdown.requested.is_set():
        print("stopping now", file=sys.stderr, flush=True)
    else:
        waited, abandoned = shutdown.waiting_for(), shutdown.abandoning()
        parts = [f"waiting up to {grace_seconds:g} s for {waited} to finish" if waited else "nothing to wait for"]
        if abandoned:
            parts.append(f"{abandoned} still running then will be abandoned and made again at the next start")
        parts.append(f"exiting within {grace_seconds + STOP_MARGIN_SECONDS:g} s (press Ctrl-C again to stop now)")
        say("stopping: " + "; ".join(parts))
    shutdown.signalled()


async def _until_stopped(role: Coroutine[Any, Any, Any], shutdown: Shutdown, grace_seconds: float) -> int:
    """Run a role until it ends; once a stop is asked for, give it its grace and a margin,
    then (or at once, on a second signal) cancel it (its cleanup, such as stopping the
    Temporal child, still runs), so no stuck request or activity keeps the process alive."""
    running = asyncio.ensure_future(role)
    asked = asyncio.ensure_future(shutdown.requested.wait())
    await asyncio.wait({running, asked}, return_when=asyncio.FIRST_COMPLETED)
    asked.cancel()
    if not running.done():
        forced = asyncio.ensure_future(shutdown.forced.wait())
        await asyncio.wait(
            {running, forced}, timeout=grace_seconds + STOP_MARGIN_SECONDS, return_when=asyncio.FIRST_COMPLETED
        )
        forced.cancel()
        if not running.done():
            if not shutdown.forced.is_set():
                log.error(
                    "still stopping %g s after the signal: cancelling what is left", grace_seconds + STOP_MARGIN_SECONDS
                )
            running.cancel()
            await asyncio.wait({running}, timeout=STOP_MARGIN_SECONDS)
            return 1
    return 0 if running.result() in (None, 0) else int(running.result())


def _event_loop_run(main_coroutine: Coroutine[Any, Any, int]) -> int:
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
    if args.command == "keys":
        sys.exit(_keys(args))
    try:
        configure_logging(os.environ.get("LOG_LEVEL", "INFO"), os.environ.get("LOG_FORMAT", "text").lower())
        configure_tracing()
    except ValueError as error:
        print(f"durable-responses {args.command}: {error}", file=sys.stderr, flush=True)
        sys.exit(1)
    try:
        code = _event_loop_run(_run(args))
    except StartupError as error:
        print(f"durable-responses {args.command}: {error}", file=sys.stderr, flush=True)
        code = 1
    sys.stdout.flush()
    # The Temporal client can crash at interpreter exit (sdk-python #300): leave at once.
    os._exit(code)


if __name__ == "__main__":
    main()
