"""`GET /v1/models` and `GET /v1/models/{id}` (`upstream/catalog.py` says what is listed)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from http_plumbing.params import json_response
from models.model_objects import ModelList
from upstream.catalog import ModelCatalog


def _catalog(request: Request) -> ModelCatalog:
    found: ModelCatalog = request.app.state.catalog
    return found


async def list_models(request: Request) -> Response:
    return json_response(ModelList(data=await _catalog(request).models()))


async def retrieve_model(request: Request) -> Response:
    return json_response(await _catalog(request).model(request.path_params["model_id"]))
