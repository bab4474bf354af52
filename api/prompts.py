"""Route handlers of the Prompts API (`/v1/prompts`, in OGX's shape): a project's prompts,
each in integer versions, one of them the default. A response names one with `prompt`
(`response_service/prompt_rendering.py`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import Response as HttpResponse
from starlette.routing import Route

from http_plumbing.body import read_json
from http_plumbing.errors import from_validation_error
from http_plumbing.params import limits, plausible_id, principal, project_quotas, repository
from models.errors import InvalidRequestError
from models.prompts import CreatePrompt, PromptVersion, SetDefaultVersion, UpdatePrompt
from store.prompts import Prompts, not_found

BODY_BYTES = 512 * 1024
"""A prompt's body is small by nature (its text is at most 100,000 characters)."""


async def _body(model: type[BaseModel], request: Request) -> Any:
    payload = await read_json(request, limits(request), most=BODY_BYTES)
    try:
        return model.model_validate(payload)
    except ValidationError as error:
        raise from_validation_error(error, payload) from None


def _prompts(request: Request) -> Prompts:
    return repository(request).prompts


def _prompt_id(request: Request) -> str:
    prompt_id: str = request.path_params["prompt_id"]
    if not plausible_id(prompt_id):
        raise not_found(prompt_id[:80])
    return prompt_id


def _json(version: PromptVersion) -> HttpResponse:
    return JSONResponse(version.model_dump(mode="json"))


def _listed(versions: list[PromptVersion]) -> HttpResponse:
    return JSONResponse({"object": "list", "data": [version.model_dump(mode="json") for version in versions]})


async def create_prompt(request: Request) -> HttpResponse:
    text: CreatePrompt = await _body(CreatePrompt, request)
    return _json(await _prompts(request).create(principal(request).project, text, project_quotas(request)))


async def list_prompts(request: Request) -> HttpResponse:
    return _listed(await _prompts(request).defaults(principal(request).project))


async def retrieve_prompt(request: Request) -> HttpResponse:
    prompt_id = _prompt_id(request)
    asked = request.query_params.get("version")
    version = None
    if asked is not None:
        if not asked.isdigit() or not 0 < len(asked) <= 9 or int(asked) < 1:
            raise InvalidRequestError(
                "Invalid 'version': expected a version number (1, 2, ...).", param="version", code="invalid_value"
            )
        version = int(asked)
    found = await _prompts(request).get(principal(request).project, prompt_id, version)
    if found is None:
        known = version is not None and await _prompts(request).get(principal(request).project, prompt_id)
        raise not_found(prompt_id, version if known else None, "version" if known else "prompt_id")
    return _json(found)


async def update_prompt(request: Request) -> HttpResponse:
    prompt_id = _prompt_id(request)
    update: UpdatePrompt = await _body(UpdatePrompt, request)
    return _json(await _prompts(request).update(principal(request).project, prompt_id, update, project_quotas(request)))


async def list_versions(request: Request) -> HttpResponse:
    prompt_id = _prompt_id(request)
    versions = await _prompts(request).versions(principal(request).project, prompt_id)
    if not versions:
        raise not_found(prompt_id)
    return _listed(versions)


async def set_default_version(request: Request) -> HttpResponse:
    prompt_id = _prompt_id(request)
    chosen: SetDefaultVersion = await _body(SetDefaultVersion, request)
    return _json(await _prompts(request).set_default(principal(request).project, prompt_id, chosen.version))


async def delete_prompt(request: Request) -> HttpResponse:
    prompt_id = _prompt_id(request)
    if not await _prompts(request).delete(principal(request).project, prompt_id):
        raise not_found(prompt_id)
    return JSONResponse({"id": prompt_id, "object": "prompt.deleted", "deleted": True})


def prompt_routes() -> list[Route]:
    one = "/v1/prompts/{prompt_id}"
    return [
        Route("/v1/prompts", create_prompt, methods=["POST"]),
        Route("/v1/prompts", list_prompts, methods=["GET"]),
        Route(one, retrieve_prompt, methods=["GET"]),
        Route(one, update_prompt, methods=["PUT"]),
        Route(one, delete_prompt, methods=["DELETE"]),
        Route(f"{one}/versions", list_versions, methods=["GET"]),
        Route(f"{one}/set-default-version", set_default_version, methods=["PUT"]),
    ]
