"""The codec endpoint: `POST /codec/decode` and `/codec/encode`, the remote codec protocol
the Temporal UI and the `temporal` CLI speak (`--codec-endpoint`), so an operator can read
the histories the payload codec (`sealing/payload_codec.py`) keeps encrypted.

It hands out plaintext, so it is guarded apart from the API's keys: with `CODEC_AUTH` set,
a request needs exactly that `Authorization` header (the CLI's `--codec-auth`); without it,
the endpoint answers only while the server has no API keys (a developer's own `dev`).
Browsers may call it from the origins in `CODEC_ALLOWED_ORIGINS` (the Temporal UI's).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from starlette.requests import Request
from starlette.responses import Response
from temporalio.api.common.v1 import Payload, Payloads

from access.keys import KeyRing as ApiKeys
from http_plumbing.body import read_json
from http_plumbing.errors import error_response
from models.errors import ApiError, AuthenticationError, InvalidRequestError, NotFoundError, SealedElsewhereError
from sealing.payload_codec import EncryptedPayloads

ALLOWED_HEADERS = "authorization, content-type, x-namespace"


@dataclass(frozen=True)
class CodecAccess:
    codec: EncryptedPayloads | None
    """None: this server has no SECRETS_KEY, and its payloads are not encrypted."""
    authorization: str = field(default="", repr=False)
    allowed_origins: Sequence[str] = ()


async def decode(request: Request) -> Response:
    return await _transcode(request, lambda codec, payloads: codec.decode(payloads))


async def encode(request: Request) -> Response:
    return await _transcode(request, lambda codec, payloads: codec.encode(payloads))


async def preflight(request: Request) -> Response:
    return Response(status_code=204, headers=_cors(request))


async def _transcode(
    request: Request,
    change: Callable[[EncryptedPayloads, list[Payload]], Awaitable[list[Payload]]],
) -> Response:
    access: CodecAccess = request.app.state.codec_access
    cors = _cors(request)
    try:
        await _check(request, access)
        assert access.codec is not None
        payloads = _payloads(await read_json(request, request.app.state.limits))
        try:
            changed = await change(access.codec, list(payloads.payloads))
        except SealedElsewhereError as error:
            raise InvalidRequestError(f"A payload cannot be decoded: {error}.", param="payloads") from None
    except ApiError as error:
        answer = error_response(error)
        answer.headers.update(cors)
        return answer
    # Built by hand so an empty list still shows (`MessageToJson` leaves empty fields out).
    body = json.dumps({"payloads": [json_format.MessageToDict(payload) for payload in changed]})
    return Response(body, media_type="application/json", headers=cors)


async def _check(request: Request, access: CodecAccess) -> None:
    if access.codec is None:
        raise NotFoundError(
            "This server has no SECRETS_KEY: its Temporal payloads are not encrypted, and there is nothing to decode."
        )
    given = request.headers.get("authorization", "")
    if access.authorization:
        if not hmac.compare_digest(given.encode(), access.authorization.encode()):
            raise AuthenticationError(
                "The codec endpoint needs the Authorization header set in CODEC_AUTH (temporal --codec-auth)."
            )
        return
    keys: ApiKeys = request.app.state.keys
    if await keys.closed():
        raise AuthenticationError(
            "This server has API keys, so its codec endpoint answers only with "
            "CODEC_AUTH set (then send it as the Authorization header)."
        )


def _payloads(body: dict[str, Any]) -> Payloads:
    try:
        return json_format.ParseDict(body, Payloads(), ignore_unknown_fields=True)
    except (json_format.ParseError, ValueError, TypeError) as error:
        raise InvalidRequestError(f"The body is not an object of `payloads`: {error}.", param="payloads") from None


def _cors(request: Request) -> dict[str, str]:
    origin = request.headers.get("origin", "")
    access: CodecAccess = request.app.state.codec_access
    if not origin or origin not in access.allowed_origins:
        return {}
    return {
        "access-control-allow-origin": origin,
        "access-control-allow-credentials": "true",
        "access-control-allow-methods": "POST, OPTIONS",
        "access-control-allow-headers": ALLOWED_HEADERS,
        "access-control-max-age": "600",
        "vary": "origin",
    }
