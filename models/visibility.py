"""What the Temporal UI and `temporal workflow list` show of a response: search attributes to
filter on, a summary and details fixed at start, and the state as the workflow's current
details. Pure values; the workflow and the API server both use them.

Search attributes must be registered in the namespace (`dev` registers them; for another
cluster see the README). A namespace without them gets none set: the API server checks at
start and tells each workflow (`ExecutionSettings.search_attributes`).
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

RESPONSE_STATE = SearchAttributeKey.for_keyword("ResponseState")
"""The response's state: created, calling_tools, awaiting_approval, completed, failed,
cancelled or incomplete (the moments of listing tools and inferring are not kept)."""
RESPONSE_MODEL = SearchAttributeKey.for_keyword("ResponseModel")
PREVIOUS_RESPONSE_ID = SearchAttributeKey.for_keyword("PreviousResponseId")

SEARCH_ATTRIBUTES = (RESPONSE_STATE, RESPONSE_MODEL, PREVIOUS_RESPONSE_ID)

SUMMARY_CHARACTERS = 100
MODEL_CHARACTERS = 200


def initial_search_attributes(model: str, previous_response_id: str | None) -> TypedSearchAttributes:
    pairs = [
        SearchAttributePair(RESPONSE_STATE, "created"),
        SearchAttributePair(RESPONSE_MODEL, model[:MODEL_CHARACTERS]),
    ]
    if previous_response_id:
        pairs.append(SearchAttributePair(PREVIOUS_RESPONSE_ID, previous_response_id))
    return TypedSearchAttributes(pairs)


def summary(model: str, first_words: str) -> str:
    """One line: the model and the first words of the input."""
    words = " ".join(first_words.split())
    line = f"{model}: {words}" if words else model
    return line if len(line) <= SUMMARY_CHARACTERS else line[: SUMMARY_CHARACTERS - 1] + "…"


def details(
    *, previous_response_id: str | None, tools: list[str], background: bool, stream: bool, conversation_id: str | None
) -> str:
    """Markdown lines the UI shows under the summary (no secrets: tools by type and label)."""
    lines = [f"**mode**: {'background' if background else 'synchronous'}{', streamed' if stream else ''}"]
    if previous_response_id:
        lines.append(f"**previous_response_id**: {previous_response_id}")
    if conversation_id:
        lines.append(f"**conversation**: {conversation_id}")
    if tools:
        lines.append("**tools**: " + ", ".join(tools))
    return "\n\n".join(lines)


def current_details(state: str, waiting_for: int = 0) -> str:
    if state == "awaiting_approval":
        return f"**awaiting approval** of {waiting_for} MCP call{'s' if waiting_for != 1 else ''}"
    return f"**{state.replace('_', ' ')}**"
