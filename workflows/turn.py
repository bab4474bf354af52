"""Pure: what the model returned -> the next step, as a typed result (no flags)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Union

from models.activity_io import InferenceResult


@dataclass(frozen=True)
class Finish:
    """The response ends here; `trigger` is the machine's, `incomplete_reason` when truncated."""

    trigger: Literal["complete", "truncate"]
    incomplete_reason: Literal["max_output_tokens", "content_filter"] | None = None
    type: Literal["finish"] = "finish"


NextStep = Union[Finish]


def next_step(result: InferenceResult) -> NextStep:
    match result.finish_reason:
        case "length":
            return Finish(trigger="truncate", incomplete_reason="max_output_tokens")
        case "content_filter":
            return Finish(trigger="truncate", incomplete_reason="content_filter")
    # Function calls are the client's to run: the response completes with them in `output`.
    return Finish(trigger="complete")
