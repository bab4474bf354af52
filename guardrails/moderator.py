"""Classifying with a moderation model of the registry.

A moderation model is a models-file entry with `model_info.mode: moderation` (or one of
OpenAI's moderation names on a `*` deployment: `upstream/registry.py`). Its calls take a slot
of its deployment's budget through the upstream gate, as inference calls do. `openai` format:
the deployment's `/moderations`, in OpenAI's shape; `llama_guard`: Llama Guard's prompt at the
deployment's chat completions, one call per subject (`llama_guard.py`).

`check` is what a response's checks use: the subjects classified and merged into one result,
retried within the plan's budget while the backend cannot answer; past the budget (or at once,
for an answer no retry can mend) the result is a `ModerationFailure` naming the backend, and
the caller fails closed or open as the plan says.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from guardrails.llama_guard import ANSWER_TOKENS, MalformedVerdictError, classifier_prompt, parse_verdict
from models.errors import CapacityWaitError, DurableResponsesError, RetryableUpstreamError, UpstreamError
from models.moderation import (
    CATEGORIES,
    UNAVAILABLE,
    InputType,
    ModerationFailure,
    ModerationResult,
    SideResult,
    applicable_types,
)
from upstream.clients import Upstreams
from upstream.gate import UpstreamGate
from upstream.pacing import Lane
from upstream.registry import Deployment, ModelRegistry

RETRY_FIRST_SECONDS = 0.5
RETRY_MAX_SECONDS = 8.0


@dataclass(frozen=True)
class Subject:
    """One thing classified as a whole: its text, and its images (URLs or data URLs)."""

    text: str
    images: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.text.strip() and not self.images


class ModerationError(DurableResponsesError):
    """A moderation call failed; `retryable` says whether trying again can help."""

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


class Moderator:
    def __init__(self, registry: ModelRegistry, upstreams: Upstreams, gate: UpstreamGate | None = None) -> None:
        self.registry = registry
        self.upstreams = upstreams
        self.gate = gate

    def knows(self, model: str) -> bool:
        return bool(self.registry.moderation_deployments(model))

    async def classify(
        self, model: str, subjects: Sequence[Subject], project: str, *, lane: Lane = "interactive", waiter: str = ""
    ) -> list[ModerationResult]:
        """One result per subject (raises `ModerationError`)."""
        deployments = self.registry.moderation_deployments(model)
        if not deployments:
            raise ModerationError(f"{model!r} is not a moderation model of this server", retryable=False)
        if not subjects:
            return []
        if self.gate is None:
            return await self._call(deployments[0], model, subjects)
        try:
            async with self.gate.slot(model, lane, project, waiter) as slot:
                results = await self._call(slot.deployment, model, subjects)
                slot.succeeded(0)
                return results
        except CapacityWaitError as error:
            raise ModerationError(f"moderation model {model!r} has no capacity now: {error}", retryable=True) from error

    async def check(
        self,
        model: str,
        subjects: Sequence[Subject],
        project: str,
        *,
        budget_seconds: float,
        waiter: str = "",
        lane: Lane = "interactive",
    ) -> SideResult:
        """The subjects' results merged into one (nothing to look at: a clean result), or a
        failure once the backend could not answer within `budget_seconds`."""
        results = await self.check_each(
            model, subjects, project, budget_seconds=budget_seconds, waiter=waiter, lane=lane
        )
        if isinstance(results, ModerationFailure):
            return results
        merged = ModerationResult.clean(model)
        for result in results:
            merged = merged.merged(result)
        return merged

    async def check_each(
        self,
        model: str,
        subjects: Sequence[Subject],
        project: str,
        *,
        budget_seconds: float,
        waiter: str = "",
        lane: Lane = "interactive",
    ) -> list[ModerationResult] | ModerationFailure:
        """A result per subject (one with nothing to look at is clean, and not sent), in one
        call where the format allows; retried while the backend cannot answer, for
        `budget_seconds` in all, then a failure that names it."""
        sent = [subject for subject in subjects if not subject.empty]
        results = await self._classified(model, sent, project, budget_seconds, waiter, lane) if sent else []
        if isinstance(results, ModerationFailure):
            return results
        answered = iter(results)
        return [ModerationResult.clean(model) if subject.empty else next(answered) for subject in subjects]

    async def _classified(
        self, model: str, subjects: Sequence[Subject], project: str, budget_seconds: float, waiter: str, lane: Lane
    ) -> list[ModerationResult] | ModerationFailure:
        """`classify`, retried with backoff while the backend cannot answer, for `budget_seconds`."""
        deadline = time.monotonic() + budget_seconds
        pause = RETRY_FIRST_SECONDS
        while True:
            try:
                return await self.classify(model, subjects, project, lane=lane, waiter=waiter)
            except ModerationError as error:
                left = deadline - time.monotonic()
                if not error.retryable or left <= 0:
                    return ModerationFailure(code=UNAVAILABLE, message=error.message[:1000])
                await asyncio.sleep(min(left, random.uniform(0, pause)))
                pause = min(pause * 2, RETRY_MAX_SECONDS)

    async def _call(self, deployment: Deployment, model: str, subjects: Sequence[Subject]) -> list[ModerationResult]:
        client = self.upstreams.client(deployment)
        where = f"moderation model {model!r} ({deployment.described})"
        try:
            if deployment.moderation_format == "llama_guard":
                return [await self._llama_guard(client, deployment, model, subject, where) for subject in subjects]
            if any(subject.images for subject in subjects):  # parts make one result: a call each
                results: list[ModerationResult] = []
                for subject in subjects:
                    answer = await client.moderations(
                        {"model": deployment.upstream_name(model), "input": _body_input([subject])}
                    )
                    results.extend(_results(answer, model, [subject], where))
                return results
            answer = await client.moderations(
                {"model": deployment.upstream_name(model), "input": _body_input(subjects)}
            )
        except UpstreamError as error:
            raise ModerationError(
                f"{where} could not answer: {error.message}", retryable=isinstance(error, RetryableUpstreamError)
            ) from error
        return _results(answer, model, subjects, where)

    async def _llama_guard(
        self, client: Any, deployment: Deployment, model: str, subject: Subject, where: str
    ) -> ModerationResult:
        completion = await client.complete(
            {
                "model": deployment.upstream_name(model),
                "messages": [{"role": "user", "content": classifier_prompt(subject.text)}],
                "max_tokens": ANSWER_TOKENS,
                "temperature": 0,
            }
        )
        choices = completion.get("choices") if isinstance(completion, dict) else None
        message = choices[0].get("message") if isinstance(choices, list) and choices else None
        content = message.get("content") if isinstance(message, dict) else None
        try:
            return parse_verdict(content if isinstance(content, str) else "", model)
        except MalformedVerdictError as error:
            raise ModerationError(f"{where} answered what is not a verdict: {error}", retryable=False) from error


def _body_input(subjects: Sequence[Subject]) -> Any:
    """OpenAI's `input`: a list of strings (a result each) when no subject has an image; else
    the one subject's parts (one result)."""
    if all(not subject.images for subject in subjects):
        return [subject.text for subject in subjects]
    subject = subjects[0]
    parts: list[dict[str, Any]] = [{"type": "text", "text": subject.text}] if subject.text else []
    parts.extend({"type": "image_url", "image_url": {"url": url}} for url in subject.images)
    return parts


def _results(answer: Any, model: str, subjects: Sequence[Subject], where: str) -> list[ModerationResult]:
    results = answer.get("results") if isinstance(answer, dict) else None
    expected = len(subjects) if all(not subject.images for subject in subjects) else 1
    if not isinstance(results, list) or len(results) != expected:
        raise ModerationError(f"{where} answered without one result per input", retryable=False)
    types: tuple[InputType, ...] = ("text", "image") if any(subject.images for subject in subjects) else ("text",)
    return [_result(each, model, types, where) for each in results]


def _result(given: Any, model: str, types: tuple[InputType, ...], where: str) -> ModerationResult:
    if not isinstance(given, dict) or not isinstance(given.get("flagged"), bool):
        raise ModerationError(f"{where} answered a result without `flagged`", retryable=False)
    categories = _mapping(given.get("categories"))
    scores = _mapping(given.get("category_scores"))
    applied = _mapping(given.get("category_applied_input_types"))
    return ModerationResult(
        model=model,
        flagged=given["flagged"],
        categories={name: categories.get(name) is True for name in CATEGORIES},
        category_scores={name: _score(scores.get(name)) for name in CATEGORIES},
        category_applied_input_types={
            name: [kind for kind in ("text", "image") if kind in (applied.get(name) or [])]
            if isinstance(applied.get(name), list)
            else applicable_types(name, types)
            for name in CATEGORIES
        },
    )


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _score(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
