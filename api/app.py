"""The ASGI app factory."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route

from api import conversations, routes
from api.admission import Admission
from api.body import Limits
from api.errors import EXCEPTION_HANDLERS
from api.runner import ResponseRunner
from store.repository import ResponseRepository


def create_app(
    repository: ResponseRepository, runner: ResponseRunner, *, max_in_flight: int = 1000, limits: Limits | None = None,
    served_model: Callable[[str], str] | None = None, mounts: Sequence[BaseRoute] = (),
) -> Starlette:
    """`served_model` names the model that answers for the one a request asks for (the demo
    model answers for every model); `mounts` are routes of other apps (`dev`'s demo tools)."""
    app = Starlette(
        routes=[
            Route("/v1/responses", routes.create_response, methods=["POST"]),
            Route("/v1/responses", routes.list_responses, methods=["GET"]),
            Route("/v1/responses/{response_id}", routes.retrieve_response, methods=["GET"]),
            Route("/v1/responses/{response_id}", routes.delete_response, methods=["DELETE"]),
            Route("/v1/responses/{response_id}/cancel", routes.cancel_response, methods=["POST"]),
            Route("/v1/responses/{response_id}/input_items", routes.list_input_items, methods=["GET"]),
            Route("/v1/responses/{response_id}/approvals", routes.decide_approval, methods=["POST"]),
            Route("/v1/conversations", conversations.create_conversation, methods=["POST"]),
            Route("/v1/conversations/{conversation_id}", conversations.retrieve_conversation, methods=["GET"]),
            Route("/v1/conversations/{conversation_id}", conversations.update_conversation, methods=["POST"]),
            Route("/v1/conversations/{conversation_id}", conversations.delete_conversation, methods=["DELETE"]),
            Route("/v1/conversations/{conversation_id}/items", conversations.list_items, methods=["GET"]),
            Route("/v1/conversations/{conversation_id}/items", conversations.add_items, methods=["POST"]),
            Route("/v1/conversations/{conversation_id}/items/{item_id}", conversations.retrieve_item, methods=["GET"]),
            Route("/v1/conversations/{conversation_id}/items/{item_id}", conversations.delete_item,
                  methods=["DELETE"]),
            Route("/health", routes.health, methods=["GET"]),
            *mounts,
        ],
        exception_handlers=EXCEPTION_HANDLERS,
    )
    app.state.repository = repository
    app.state.runner = runner
    app.state.admission = Admission(max_in_flight)
    app.state.limits = limits or Limits()
    app.state.served_model = served_model
    return app
