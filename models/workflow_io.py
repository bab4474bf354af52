"""The input of `ResponseWorkflow` and the knobs the deployment sets for it."""

from __future__ import annotations

from pydantic import BaseModel, Field

from models.responses import Response


class RetryBudget(BaseModel):
    """How long and how often Temporal retries one kind of activity."""

    start_to_close_seconds: float = Field(gt=0)
    maximum_attempts: int = Field(ge=1)
    initial_interval_seconds: float = Field(default=1.0, gt=0)
    maximum_interval_seconds: float = Field(default=30.0, gt=0)


class ExecutionSettings(BaseModel):
    """Chosen by the API server from its configuration and fixed for the workflow's life."""

    inference: RetryBudget = RetryBudget(start_to_close_seconds=600, maximum_attempts=6)
    store: RetryBudget = RetryBudget(start_to_close_seconds=30, maximum_attempts=10, maximum_interval_seconds=5)


class ResponseWorkflowInput(BaseModel):
    response: Response
    settings: ExecutionSettings = Field(default_factory=ExecutionSettings)
    emit_events: bool = False
    """Keep an event log (for `stream: true` or `background: true` responses)."""
