"""From a request body to a response ready to start, or an `ApiError`: every check that can
refuse a request happens here, before anything reaches Temporal."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import TypeAdapter, ValidationError
from starlette.requests import HTTPConnection

from access.egress import EgressPolicy, EgressRefusedError
from access.principal import Principal
from guardrails.policy import GuardrailPolicy
from http_plumbing.body import Limits
from http_plumbing.errors import from_validation_error
from http_plumbing.params import limits
from http_plumbing.params import repository as repository_of
from models import history_budget
from models.client_tools import CLIENT_TOOLS, is_client_call
from models.errors import ConflictError, InvalidRequestError, NotFoundError
from models.hosted_tools import HOSTED_TOOLS
from models.ids import new_id
from models.items import InputItem
from models.mcp import ApprovalDecision, McpListing
from models.requests import CreateResponseRequest
from models.responses import Response
from models.tools import McpSecrets
from response_service.approvals import answered_approvals
from response_service.code_containers import AutoContainer, code_containers
from response_service.context_size import check_compactions, check_fits
from response_service.input_checks import check_items
from response_service.prompt_rendering import with_prompt
from sandbox.settings import SandboxSettings
from sealing.secret_box import SecretBox
from store.conversations import Conversations, conversation_not_found
from store.parked import Parked
from store.repository import ResponseRepository
from store.responses import Responses
from store.schema import NO_PROJECT
from store.vector_stores import VectorStores
from upstream.windows import ContextWindows

ITEM_ID_PREFIX = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "reasoning": "rs",
    "custom_tool_call": "ctc",
    "custom_tool_call_output": "ctco",
    **{hosted.item_type: hosted.id_prefix for hosted in HOSTED_TOOLS},
    "shell_call_output": "sho",
    **{typed.item_type: typed.id_prefix for typed in CLIENT_TOOLS},
    **{typed.output_type: f"{typed.id_prefix}o" for typed in CLIENT_TOOLS},
    "tool_search_call": "tsc",
    "tool_search_output": "tso",
    "compaction": "cmp",
    "compaction_trigger": "cmpt",
    "mcp_list_tools": "mcpl",
    "mcp_call": "mcp",
    "mcp_approval_request": "mcpr",
    "mcp_approval_response": "mcpa",
}
_input_item = TypeAdapter(InputItem)


@dataclass(frozen=True)
class PreparedResponse:
    request: CreateResponseRequest
    response: Response
    items: list[tuple[str, dict[str, Any]]]
    secrets: dict[str, McpSecrets]
    """MCP secrets by server label, to be sealed in the store; `response` carries none."""
    listings: list[McpListing]
    """The chain's MCP listings, which this response reuses."""
    approvals: list[ApprovalDecision]
    """Answers to approval requests (and requests the previous response left unanswered)."""
    parked: Parked
    """Heavy fields of the approval requests in `approvals` that travel as stubs."""
    applied: frozenset[str] = frozenset()
    """The requests in `approvals` whose answer is a decision kept for them in the approvals
    inbox, which this response applies (`api/approvals.py`)."""
    containers: list[AutoContainer] = field(default_factory=list)
    """Containers its `code_interpreter` tools asked for, made when it is kept
    (`response_service/code_containers.py`)."""
    commits: list[str] = field(default_factory=list)
    """Pending steers of the previous response whose input it starts with
    (`websocket_mode/steering.py`), committed to it when it is kept."""

    @property
    def closes(self) -> list[str]:
        """The approval requests this response answers, applies or leaves: no longer open."""
        return [decision.request.id for decision in self.approvals]

    @property
    def answers(self) -> dict[str, bool]:
        """The client's own answers, to be kept."""
        return {
            decision.request.id: decision.approve
            for decision in self.approvals
            if decision.approve is not None and decision.request.id not in self.applied
        }


def with_message_types(items: Any) -> Any:
    """An "easy" message ({role, content}) may leave out its type."""
    if not isinstance(items, list):
        return items
    return [
        {"type": "message", **item} if isinstance(item, dict) and "type" not in item and "role" in item else item
        for item in items
    ]


def as_stored(items: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """Items as they are kept and listed, each under its id (given, or made for it)."""
    return [
        (item_id, item.as_listed(item_id))
        for item in items
        for item_id in [item.id or new_id(ITEM_ID_PREFIX[item.type])]
    ]


def validate(payload: dict[str, Any]) -> CreateResponseRequest:
    if "input" in payload:
        payload["input"] = with_message_types(payload["input"])
    try:
        return CreateResponseRequest.model_validate(payload)
    except ValidationError as error:
        raise from_validation_error(error, payload) from None


async def prepare(
    payload: dict[str, Any],
    repository: ResponseRepository,
    limits: Limits,
    *,
    served_model: Callable[[str], str] | None = None,
    project: str = NO_PROJECT,
    decided_by: str | None = None,
    egress: EgressPolicy | None = None,
    known_model: Callable[[str], bool] | None = None,
    windows: ContextWindows | None = None,
    compact_only: bool = False,
    sandbox: SandboxSettings | None = None,
    held: Collection[str] = (),
    guardrails: GuardrailPolicy | None = None,
) -> PreparedResponse:
    """Everything the request names (a previous response, a conversation, referenced items,
    approval requests) must belong to `project`; what does not is unknown, as an unknown id is.
    `known_model`: whether the model registry serves a model name (an unknown one is a 404).
    `windows`: the models' context windows, to refuse what cannot fit (`response_service/context_size.py`).
    `compact_only`: the response compacts its context and answers nothing else (as one whose
    input ends with a `compaction_trigger` does). `sandbox`: how this server runs code (the
    containers of `code_interpreter` tools); `held`: unstored responses the
    request may continue from all the same (those its WebSocket connection holds);
    `guardrails`: the moderation a response runs and who may ask (`guardrails/policy.py`)."""
    request, prompt = await with_prompt(validate(payload), repository.prompts, project, limits.max_workflow_input_bytes)
    if guardrails is not None:
        await guardrails.admit_identifier(project, request.safety_identifier)
    if served_model is not None:
        request = request.model_copy(update={"model": served_model(request.model)})
    if known_model is not None and not known_model(request.model):
        raise NotFoundError(
            f"The model `{request.model}` does not exist or you do not have access to it.",
            param="model",
            code="model_not_found",
        )
    await _reachable_urls(request, egress or EgressPolicy())
    if request.max_output_tokens is not None and request.max_output_tokens > limits.max_output_tokens:
        raise InvalidRequestError(
            f"Invalid 'max_output_tokens': at most {limits.max_output_tokens} on this server (MAX_OUTPUT_TOKENS).",
            param="max_output_tokens",
            code="invalid_value",
        )
    items = await resolved(request.input_items(), repository.responses, project)
    previous, known_context, known_items = await history_of(
        request, repository.responses, repository.conversations, project, held
    )
    if not items and request.previous_response_id is None and request.conversation is None:
        raise InvalidRequestError(
            "Missing required parameter: 'input'.", param="input", code="missing_required_parameter"
        )
    check_items(items, _call_ids(known_context, known_items))
    check_compactions(items, repository.secret_box, project)
    await _vector_stores_exist(request, repository.vector_stores, project)
    request, containers = await code_containers(
        request,
        repository.containers,
        repository.files,
        project,
        previous,
        sandbox or SandboxSettings(),
    )
    secrets = _secrets(request, repository.secret_box)
    has_mcp = any(tool.type == "mcp" for tool in request.tools)
    listings = await repository.responses.listings(previous.id) if previous is not None and has_mcp else []
    approvals, applied = await answered_approvals(
        request, items, previous, repository.approvals, repository.responses, known_items, project, decided_by
    )
    response = Response.from_request(new_id("resp"), int(time.time()), request)
    response.compact_only = compact_only or bool(items and items[-1].type == "compaction_trigger")
    response.prompt = prompt
    if guardrails is not None:
        response.moderation_plan = guardrails.plan_for(project, response.moderation_plan)
    if windows is not None:
        await check_fits(response, known_context, known_items, items, repository.secret_box, project, windows)
    approvals, listings, parked = _stubbed(approvals, listings)
    listings = _within_budget(response, listings, approvals, limits)
    return PreparedResponse(
        request=request,
        response=response,
        items=as_stored(items),
        secrets=secrets,
        listings=listings,
        approvals=approvals,
        parked=parked,
        applied=applied,
        containers=containers,
    )


async def history_of(
    request: CreateResponseRequest,
    responses: Responses,
    conversations: Conversations,
    project: str,
    held: Collection[str] = (),
) -> tuple[Response | None, list[dict[str, Any]], list[Any]]:
    """What the request continues: the previous response and its chat context, or the items
    of its conversation (each of `project`, or not found; not both)."""
    if request.previous_response_id is not None and request.conversation is not None:
        raise InvalidRequestError(
            "Mutually exclusive parameters: send either 'previous_response_id' or 'conversation', not both.",
            code="mutually_exclusive_parameters",
        )
    known_context: list[dict[str, Any]] = []
    previous: Response | None = None
    if request.previous_response_id is not None:
        previous = await responses.get(
            request.previous_response_id, project=project, include_unstored=request.previous_response_id in held
        )
        if previous is None:
            raise NotFoundError(
                f"Previous response with id '{request.previous_response_id}' not found.",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        if not previous.is_terminal:
            raise ConflictError(
                f"Previous response with id '{request.previous_response_id}' is still {previous.status}; "
                "wait for it to finish before continuing from it.",
                param="previous_response_id",
            )
        known_context = await responses.chat_context(previous.id) or []
    known_items: list[Any] = []
    if request.conversation_id is not None:
        conversation = await conversations.get(request.conversation_id)
        if conversation is None or conversation.project != project:
            raise conversation_not_found(request.conversation_id, "conversation")
        known_items = [_input_item.validate_python(item) for item in await conversations.items(request.conversation_id)]
    return previous, known_context, known_items


async def _vector_stores_exist(request: CreateResponseRequest, vector_stores: VectorStores, project: str) -> None:
    """Every vector store a `file_search` tool names is one of the project's."""
    for index, tool in enumerate(request.tools):
        if tool.type != "file_search":
            continue
        found = await vector_stores.some(list(tool.vector_store_ids), project)
        for position, vector_store_id in enumerate(tool.vector_store_ids):
            if vector_store_id not in found:
                raise NotFoundError(
                    f"Vector store with id '{vector_store_id}' not found.",
                    param=f"tools[{index}].vector_store_ids[{position}]",
                )


async def _reachable_urls(request: CreateResponseRequest, egress: EgressPolicy) -> None:
    """Every MCP `server_url`, and every image URL the backend will fetch (a self-hosted one
    fetches from inside this network), must be at an address this server may reach; a
    refusal says the same whatever the reason (the host does not resolve, or resolves to a
    private address). Data URLs are the image itself."""
    for index, item in enumerate(request.input_items()):
        if getattr(item, "type", None) != "message":
            continue
        for part_index, part in enumerate(item.content_parts()):
            url = getattr(part, "image_url", None) if part.type == "input_image" else None
            if not url or url.startswith("data:"):
                continue
            try:
                if not url.startswith(("http://", "https://")):
                    raise EgressRefusedError(url)
                await egress.check_url(url)
            except EgressRefusedError:
                raise InvalidRequestError(
                    f"Invalid 'input[{index}].content[{part_index}].image_url': this server may not fetch that "
                    "URL. Send a public http(s) URL, or the image itself as a data URL.",
                    param=f"input[{index}].content[{part_index}].image_url",
                    code="invalid_value",
                ) from None
    for index, tool in enumerate(request.tools):
        if tool.type != "mcp" or not tool.server_url:
            continue
        try:
            await egress.check_url(tool.server_url)
        except EgressRefusedError:
            raise InvalidRequestError(
                f"Invalid 'tools[{index}].server_url': this server may not connect to that URL.",
                param=f"tools[{index}].server_url",
                code="invalid_value",
            ) from None


async def resolved(items: list[Any], responses: Responses, project: str) -> list[Any]:
    """Input items with each `item_reference` replaced by the item it names: an item of any
    stored response or conversation of `project`."""
    resolved = []
    for index, item in enumerate(items):
        if item.type != "item_reference":
            resolved.append(item)
            continue
        found = await responses.find_item(item.id, project)
        if found is None:
            raise NotFoundError(
                f"Item with id '{item.id}' not found.", param=f"input[{index}].id", code="item_not_found"
            )
        try:
            resolved.append(_input_item.validate_python(found))
        except ValidationError:
            raise InvalidRequestError(
                f"Item with id '{item.id}' cannot be used as input.", param=f"input[{index}].id", code="invalid_value"
            ) from None
    return resolved


def _call_ids(context: list[dict[str, Any]], items: list[Any]) -> set[str]:
    """Calls a tool output may answer: those of the chat context or items a response continues."""
    known = {call["id"] for message in context for call in message.get("tool_calls") or []}
    known.update(
        item.call_id for item in items if item.type in ("function_call", "custom_tool_call") or is_client_call(item)
    )
    return known


def _secrets(request: CreateResponseRequest, secret_box: SecretBox | None) -> dict[str, McpSecrets]:
    secrets = {
        tool.server_label: found
        for tool in request.tools
        if tool.type == "mcp"
        for found in [tool.secrets()]
        if found is not None
    }
    if secrets and secret_box is None:
        raise InvalidRequestError(
            "This server cannot keep MCP `headers` or `authorization` secret: its operator has not set "
            "SECRETS_KEY. Send the MCP tool without them, or ask for SECRETS_KEY to be set.",
            param="tools",
            code="unsupported_parameter",
        )
    return secrets


def _stubbed(
    approvals: list[ApprovalDecision], listings: list[McpListing]
) -> tuple[list[ApprovalDecision], list[McpListing], Parked]:
    """Approval requests with large arguments, and large listings of the chain, travel as
    stubs; their heavy fields are parked."""
    parked: Parked = {}

    def light(item: Any) -> Any:
        if not history_budget.should_park(item):
            return item
        parked[item.id] = history_budget.heavy_fields(item)
        return history_budget.stubbed(item)

    carried = [decision.model_copy(update={"request": light(decision.request)}) for decision in approvals]
    lighter = [listing.model_copy(update={"item": light(listing.item)}) for listing in listings]
    return carried, lighter, parked


def _within_budget(
    response: Response, listings: list[McpListing], approvals: list[ApprovalDecision], limits: Limits
) -> list[McpListing]:
    """What the response's workflow starts with must fit Temporal's history: the request's
    own part is refused past the limit, naming the heaviest parameter; the chain's MCP
    listings that do not fit are left out (those servers are listed again)."""
    budget = limits.max_workflow_input_bytes
    weight = history_budget.size_of(response) + sum(history_budget.size_of(decision) for decision in approvals)
    if weight > budget:
        parts = {
            "instructions": len(response.instructions or ""),
            "tools": _size(response.tools),
            "metadata": _size(response.metadata),
            "input": _size(approvals),
        }
        heaviest = max(parts, key=lambda name: parts[name])
        raise InvalidRequestError(
            f"Invalid '{heaviest}': too large ({parts[heaviest] // 1024} KiB). What a response carries besides its "
            f"input items (instructions, tools, metadata, approvals) may weigh at most {budget // 1024} KiB; send "
            "long context as input items instead.",
            param=heaviest,
            code="invalid_value",
        )
    kept = []
    for listing in listings:
        weight += history_budget.size_of(listing)
        if weight <= budget:
            kept.append(listing)
    return kept


def _size(value: Any) -> int:
    return len(orjson.dumps(value, default=lambda model: model.model_dump(mode="json")))


async def user_input(given: Any, egress: EgressPolicy) -> list[tuple[str, dict[str, Any]]]:
    """Steering input (`response.steer`'s `input`), checked as `input` is and kept as listed:
    text, or messages of the user's (`type`, `role`, `content` only)."""
    if isinstance(given, str):
        given = [{"type": "message", "role": "user", "content": given}]
    if not isinstance(given, list) or not given:
        raise InvalidRequestError(
            "Invalid 'input': expected a string or a non-empty array of user messages.",
            param="input",
            code="invalid_value",
        )
    for index, item in enumerate(given):
        if not isinstance(item, dict) or item.get("role") != "user" or item.get("type", "message") != "message":
            raise InvalidRequestError(
                f"Invalid 'input[{index}]': steering takes only messages with the `user` role.",
                param=f"input[{index}]",
                code="invalid_value",
            )
        if extra := sorted(set(item) - {"type", "role", "content"}):
            raise InvalidRequestError(
                f"Unknown parameter: 'input[{index}].{extra[0]}'.",
                param=f"input[{index}].{extra[0]}",
                code="unknown_parameter",
            )
    request = validate({"model": "-", "input": given})
    await _reachable_urls(request, egress)
    items = request.input_items()
    check_items(items, set())
    return as_stored(items)


async def prepared_for(
    request: HTTPConnection, acting: Principal, payload: dict[str, Any], **options: Any
) -> PreparedResponse:
    """`prepare` with what this server and the key decide: the demo model's name, the key's
    project and id, the egress policy, the registry's models (`options`: the rest)."""
    return await prepare(
        payload,
        repository_of(request),
        limits(request),
        served_model=request.app.state.served_model,
        project=acting.project,
        decided_by=acting.key_id,
        egress=request.app.state.egress,
        known_model=request.app.state.registry.knows,
        sandbox=request.app.state.sandbox,
        guardrails=request.app.state.guardrails,
        **options,
    )
