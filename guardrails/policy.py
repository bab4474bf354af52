"""The API's side of the guardrail seam: what a request's checks will be, and whether its
`safety_identifier` may ask at all. Called from `response_service/preparation.py` for every request (HTTP
and WebSocket), before anything is kept."""

from __future__ import annotations

from guardrails.settings import ModerationSettings
from models.errors import InvalidRequestError, PermissionDeniedError
from models.moderation import ModerationPlan, stronger
from store.safety_strikes import SafetyStrikes
from upstream.registry import ModelRegistry


class GuardrailPolicy:
    def __init__(self, settings: ModerationSettings, registry: ModelRegistry, strikes: SafetyStrikes) -> None:
        self.settings = settings
        self.registry = registry
        self.strikes = strikes

    def plan_for(self, project: str, requested: ModerationPlan | None) -> ModerationPlan | None:
        """The checks a response of `project` runs: the request's, made no weaker than the
        project's required policy (whose model wins); None: no checks. A model that is not a
        moderation model of this server is refused, naming the parameter."""
        required = self.settings.required_for(project)
        if requested is None and required is None:
            return None
        if required is not None:
            model = required.model
            input_mode = stronger(required.input, requested.input if requested else None)
            output_mode = stronger(required.output, requested.output if requested else None)
        else:
            assert requested is not None
            model, input_mode, output_mode = requested.model, requested.input, requested.output
        if not self.registry.moderation_deployments(model):
            param = "moderation.model" if required is None else "moderation"
            raise InvalidRequestError(
                f"Invalid 'moderation.model': {model[:80]!r} is not a moderation model of this server "
                "(a models-file entry with `model_info.mode: moderation`, or one of OpenAI's moderation "
                "models on a backend that serves any name).",
                param=param,
                code="invalid_value",
            )
        return self.settings.plan(model, input_mode, output_mode)

    async def admit_identifier(self, project: str, identifier: str | None) -> None:
        """Refuse (403) an end user whose responses were blocked too often lately."""
        limit = self.settings.safety
        if not identifier or not limit.blocks:
            return
        if await self.strikes.within(project, identifier, limit.window_seconds) >= limit.blocks:
            raise PermissionDeniedError(
                "This safety_identifier is blocked: too many of its responses were blocked by moderation "
                f"within {limit.window_seconds:g} s.",
                param="safety_identifier",
                code="safety_identifier_blocked",
            )
