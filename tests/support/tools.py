"""Tool definitions the tests build in bulk."""

from __future__ import annotations


def namespace_of(count: int, prefix: str) -> dict:
    """A namespace of `count` function tools named `prefix` + their index."""
    return {
        "type": "namespace",
        "name": "ns",
        "tools": [
            {"type": "function", "name": f"{prefix}{index}", "parameters": {"type": "object"}} for index in range(count)
        ],
    }
