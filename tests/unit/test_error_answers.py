"""What a 503 tells a client: every one it may retry says when (`retry-after`, which OpenAI's
SDKs and the bed's checker read), and the one it must not retry says so."""

from __future__ import annotations

import asyncio
import json

from http_plumbing.errors import error_response, handle_store_unavailable
from models.errors import StoppingError, StoreUnavailableError, UnavailableError


def _every_subclass(root: type[UnavailableError]) -> list[type[UnavailableError]]:
    found = [root]
    for child in root.__subclasses__():
        found += _every_subclass(child)
    return found


def test_every_503_says_when_to_retry_or_that_a_retry_must_not_be_made() -> None:
    kinds = _every_subclass(UnavailableError)
    assert len(kinds) >= 3
    for kind in kinds:
        error = StoppingError("stopped") if kind is StoppingError else kind("unavailable")
        headers = error_response(error).headers
        if kind is StoppingError:
            assert headers["x-should-retry"] == "false" and "retry-after" not in headers
        else:
            assert int(headers["retry-after"]) >= 1, kind


def test_a_store_that_cannot_be_reached_is_a_503_with_retry_after() -> None:
    answer = asyncio.run(handle_store_unavailable(None, StoreUnavailableError("the database connection was lost")))  # type: ignore[arg-type]
    assert answer.status_code == 503
    assert int(answer.headers["retry-after"]) >= 1
    assert json.loads(bytes(answer.body))["error"]["code"] == "store_unavailable"
