"""Browsers and load, against `dev` as users run it: the `Host` header must name the
server, headers and bodies must arrive in time, each key has a bounded number of open
requests and streams (and, when set, requests a minute), answered 429 with `retry-after` in
OpenAI's shape; `/health` stays fast with 200 streams open."""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.dev_stack import DevStack
from tests.support.keys import keys_in
from tests.support.processes import CLI, free_port
from tests.support.scripted_backend import Reply, ScriptedBackend

LIMITS = {
    "HEADER_TIMEOUT_SECONDS": "1",
    "BODY_TIMEOUT_SECONDS": "1",
    "MAX_INFLIGHT_PER_KEY": "2",
    "MAX_STREAMS_PER_KEY": "1",
    "RATE_LIMIT_PER_MINUTE": "30",
}


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory, backend: ScriptedBackend) -> Iterator[tuple[DevStack, list[str]]]:
    data_dir = tmp_path_factory.mktemp("limited") / "data"
    keys = list(keys_in(data_dir, "one", "two", "three", "four").values())
    stack = DevStack(data_dir, backend, env=LIMITS)
    stack.start()
    yield stack, keys
    stack.close()


def _raw(port: int, data: bytes) -> socket.socket:
    connection = socket.create_connection(("127.0.0.1", port), timeout=10)
    connection.sendall(data)
    return connection


def _read_all(connection: socket.socket) -> bytes:
    """One HTTP response: up to its Content-Length once its head has come (a kept-alive
    connection stays open for seconds after it), or else up to the close."""
    received = b""
    while chunk := connection.recv(65536):
        received += chunk
        head, separator, body = received.partition(b"\r\n\r\n")
        lengths = [
            line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
        ]
        if separator and lengths and len(body) >= int(lengths[0]):
            break
    return received


def test_a_foreign_host_header_is_refused(limited):
    stack, keys = limited
    headers = {"authorization": f"Bearer {keys[0]}"}
    for host in ("evil.example", "127.0.0.1.nip.io", "attacker.test:8000"):
        answer = httpx.get(f"{stack.url}/v1/responses", headers=headers | {"host": host})
        assert answer.status_code == 400, host
        assert answer.json()["error"] == {
            "message": "Invalid Host header: this server does not answer to that name.",
            "type": "invalid_request_error",
            "param": "Host",
            "code": "invalid_host",
        }
    for host in (f"127.0.0.1:{stack.port}", f"localhost:{stack.port}", "localhost"):
        assert httpx.get(f"{stack.url}/v1/responses", headers=headers | {"host": host}).status_code == 200, host


def test_a_cross_site_form_post_is_refused(limited):
    stack, keys = limited
    answer = httpx.post(
        f"{stack.url}/v1/responses",
        content=b'{"model":"m","input":"hi"}',
        headers={"content-type": "text/plain", "authorization": f"Bearer {keys[0]}", "origin": "https://evil.example"},
    )
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid_content_type"
    assert "access-control-allow-origin" not in answer.headers


def test_headers_that_never_finish_are_cut_off(limited):
    stack, _ = limited
    held = [_raw(stack.port, b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-") for _ in range(20)]
    started = time.monotonic()
    answers = [_read_all(connection) for connection in held]
    assert time.monotonic() - started < 8
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in answers)
    assert httpx.get(f"{stack.url}/health").status_code == 200


def test_an_idle_connection_outlives_the_sdks_own_hold_on_it(limited):
    """The openai SDK drops an idle connection after `keepalive_expiry`; the server must hold
    it longer, or a request sent in the instant the server closes it is reset (seen as a
    ReadError by `responses.cancel` on a loaded machine)."""
    from openai._constants import DEFAULT_CONNECTION_LIMITS

    stack, _ = limited
    request = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    connection = _raw(stack.port, request)
    assert _read_all(connection).startswith(b"HTTP/1.1 200 ")
    assert DEFAULT_CONNECTION_LIMITS.keepalive_expiry is not None
    time.sleep(DEFAULT_CONNECTION_LIMITS.keepalive_expiry + 1)
    connection.sendall(request)
    assert _read_all(connection).startswith(b"HTTP/1.1 200 ")


def test_a_body_that_never_finishes_gets_a_408(limited):
    stack, keys = limited
    connection = _raw(
        stack.port,
        (
            f"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            f"\r\nAuthorization: Bearer {keys[0]}\r\nContent-Length: 100\r\n\r\n"
        ).encode()
        + b'{"model": ',
    )
    answer = _read_all(connection).decode()
    assert answer.startswith("HTTP/1.1 408 ")
    assert '"code":"request_timeout"' in answer and "did not arrive within 1 s" in answer


def test_a_key_with_too_many_requests_open_gets_a_429(limited, backend: ScriptedBackend):
    stack, keys = limited
    model = f"slow-{uuid.uuid4().hex[:6]}"
    backend.script(model, [Reply(text="late", delay=3)] * 2)
    key = keys[1]
    held = [
        threading.Thread(
            target=httpx.post,
            args=(f"{stack.url}/v1/responses",),
            kwargs={
                "json": {"model": model, "input": "wait"},
                "timeout": 30,
                "headers": {"authorization": f"Bearer {key}"},
            },
        )
        for _ in range(2)
    ]
    for thread in held:
        thread.start()
    deadline = time.monotonic() + 10
    while len(backend.requests(model)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    refused = httpx.post(
        f"{stack.url}/v1/responses",
        json={"model": "m", "input": "one more"},
        headers={"authorization": f"Bearer {key}"},
    )
    other_key = httpx.post(
        f"{stack.url}/v1/responses",
        json={"model": "m", "input": "another key"},
        headers={"authorization": f"Bearer {keys[2]}"},
    )
    decided = httpx.post(
        f"{stack.url}/v1/responses/resp_{uuid.uuid4().hex}/approvals",
        json={"approval_request_id": "mcpr_x", "approve": True},
        headers={"authorization": f"Bearer {key}"},
    )
    for thread in held:
        thread.join(30)
    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert refused.json()["error"]["code"] == "rate_limit_exceeded" and "MAX_INFLIGHT_PER_KEY" in refused.text
    assert decided.status_code == 404, "an approval decision is never refused for the requests its key has open"
    assert other_key.status_code == 200, "one key's load never refuses another key"


def test_a_key_with_too_many_streams_open_gets_a_429(limited, backend: ScriptedBackend):
    stack, keys = limited
    model = f"stream-{uuid.uuid4().hex[:6]}"
    backend.script(model, [Reply(text="slowly", delay=2)])
    headers = {"authorization": f"Bearer {keys[2]}"}
    with httpx.stream(
        "POST",
        f"{stack.url}/v1/responses",
        headers=headers,
        timeout=30,
        json={"model": model, "input": "stream", "stream": True},
    ) as first:
        assert first.status_code == 200
        second = httpx.post(
            f"{stack.url}/v1/responses", headers=headers, json={"model": "m", "input": "stream", "stream": True}
        )
        assert second.status_code == 429 and "MAX_STREAMS_PER_KEY" in second.text
        first.read()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the slot frees when the first stream ends
        again = httpx.post(
            f"{stack.url}/v1/responses", headers=headers, json={"model": "m", "input": "s", "stream": True}
        )
        if again.status_code == 200:
            break
        time.sleep(0.1)
    assert again.status_code == 200


def test_a_key_past_its_rate_gets_a_429_saying_when_to_retry(limited):
    stack, keys = limited
    headers = {"authorization": f"Bearer {keys[3]}"}
    # One connection, kept alive: the 31 requests fit well inside the 2 s the limit takes to
    # grant one more (a connection each took longer than that on a loaded machine).
    with httpx.Client(base_url=stack.url, headers=headers, timeout=30) as client:
        answers = [client.get("/v1/responses/resp_unknown").status_code for _ in range(31)]
        refused = client.get("/v1/responses/resp_unknown")
    assert answers[:30] == [404] * 30 and answers[30] == 429
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert "RATE_LIMIT_PER_MINUTE" in refused.json()["error"]["message"]


def test_health_stays_fast_with_200_streams_open(tmp_path: Path, backend: ScriptedBackend):
    stack = DevStack(tmp_path / "data", backend, env={"MAX_STREAMS_PER_KEY": "1000", "MAX_INFLIGHT_PER_KEY": "1000"})
    stack.start()
    try:
        model = f"hold-{uuid.uuid4().hex[:6]}"
        backend.script(model, [Reply(text="done", delay=60)])
        running = httpx.post(f"{stack.url}/v1/responses", json={"model": model, "input": "x", "background": True})

        async def measure() -> list[float]:
            limits = httpx.Limits(max_connections=300)
            async with httpx.AsyncClient(base_url=stack.url, timeout=60, limits=limits) as client:
                opened = asyncio.Event()
                count = 0

                async def hold() -> None:
                    nonlocal count
                    async with client.stream("GET", f"/v1/responses/{running.json()['id']}?stream=true") as stream:
                        async for _ in stream.aiter_bytes():
                            count += 1
                            if count == 200:
                                opened.set()
                            await asyncio.sleep(3600)

                holders = [asyncio.create_task(hold()) for _ in range(200)]
                await asyncio.wait_for(opened.wait(), 60)
                took = []
                for _ in range(5):
                    started = time.perf_counter()
                    assert (await client.get("/health")).status_code == 200
                    took.append(time.perf_counter() - started)
                    await asyncio.sleep(0.1)
                for holder in holders:
                    holder.cancel()
                return took

        took = asyncio.run(measure())
        assert statistics.median(took) < 0.2, took
        httpx.post(f"{stack.url}/v1/responses/{running.json()['id']}/cancel")
    finally:
        stack.close()


def test_serve_on_a_public_address_needs_keys_or_open(tmp_path: Path):
    env = os.environ | {"STARTUP_WAIT_SECONDS": "1", "DATABASE_URL": f"sqlite:///{tmp_path / 'store.db'}"}
    refused = subprocess.run(
        [
            CLI,
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
            "--temporal-address",
            f"127.0.0.1:{free_port()}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        "durable-responses serve: no API keys exist, and 0.0.0.0 is not a loopback address: create a key with "
        "`durable-responses keys create --project NAME --database-url ...`, or run open on purpose with --open "
        "(ALLOW_OPEN=true)"
    )


def test_a_stream_its_client_left_at_once_gives_its_slot_back(limited, backend: ScriptedBackend):
    """Clients that hang up before the first frame must not use up the key's streams."""
    stack, keys = limited
    model = f"left-{uuid.uuid4().hex[:6]}"
    backend.script(model, [Reply(text="nobody reads this", delay=1)] * 3)
    body = f'{{"model": "{model}", "input": "x", "stream": true}}'.encode()
    for _ in range(3):
        connection = _raw(
            stack.port,
            (
                f"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                f"application/json\r\nAuthorization: Bearer {keys[2]}\r\nContent-Length: "
                f"{len(body)}\r\n\r\n"
            ).encode()
            + body,
        )
        connection.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        again = httpx.post(
            f"{stack.url}/v1/responses",
            headers={"authorization": f"Bearer {keys[2]}"},
            json={"model": "m", "input": "s", "stream": True},
        )
        if again.status_code == 200:
            break
        time.sleep(0.2)
    assert again.status_code == 200, again.text
