"""JSON text in and out of the store. Documents are kept as JSON text, so what a writer
serialized once (pydantic's or orjson's compact form) can be sent on as it is."""

from __future__ import annotations

from typing import Any

import orjson


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def loads(text: str | bytes | None) -> Any:
    return None if text is None else orjson.loads(text)
