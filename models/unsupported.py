"""A parameter a request may not have here, raised inside validation (any model's): the API
turns it into a 400 `unsupported_parameter` that names it (`http_plumbing/errors.py`)."""

from __future__ import annotations


class UnsupportedParameter(ValueError):
    def __init__(self, param: str, why: str) -> None:
        super().__init__(f"{why} (parameter '{param}')")
        self.param = param
        self.why = why
