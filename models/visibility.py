"""What the Temporal UI and `temporal workflow list` show of a response: search attributes to
filter on, a summary fixed at start when the operator wants the input's first words shown,
and as the workflow's current details its state and what the response is. Pure values; the
workflow and the API server both use them.

Search attributes must be registered in the namespace (`dev` registers them; for another
cluster see the README). A namespace without them gets none set: the API server checks at
start and tells each workflow (`ExecutionSettings.search_attributes`).
"""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

RESPONSE_STATE = SearchAttributeKey.for_keyword("ResponseState")
"""What Temporal's own status cannot say of a response: where a running one waits
(`calling_tools`, `awaiting_approval`) and then how it ended, or that it ended `incomplete`
(`state_is_kept`)."""
RESPONSE_MODEL = SearchAttributeKey.for_keyword("ResponseModel")
PREVIOUS_RESPONSE_ID = SearchAttributeKey.for_keyword("PreviousResponseId")

SEARCH_ATTRIBUTES = (RESPONSE_STATE, RESPONSE_MODEL, PREVIOUS_RESPONSE_ID)

SUMMARY_CHARACTERS = 100
MODEL_CHARACTERS = 200


WAITING_STATES = frozenset({"calling_tools", "awaiting_approval"})
"""The states a response may stay in for long: kept in `ResponseState` as it enters them."""
UNTOLD_ENDS = frozenset({"incomplete"})
"""Ends Temporal's status does not tell apart (an incomplete response's workflow is
`Completed`); a completed, failed or cancelled one's is `Completed`, `Failed`, `Canceled`."""
ENDS = frozenset({"completed", "failed", "cancelled", "incomplete"})


def state_is_kept(state: str, kept: str | None) -> bool:
    """Whether the response's new `state` goes into `ResponseState`, which holds `kept` now.

    Each value is a history event and a visibility write: in `python -m bench.ab` at
    concurrency 10, the one at the end of every response cost a plain response 1.5-1.6 ms of
    `dev`'s CPU and 1.7-2.1 ms of its Temporal server's (at 50, no change above the noise).
    So a response keeps its state there only
    where Temporal's own status cannot tell it: the states it waits in, and its end once it
    waited (what it holds must not say it still waits) or when the end is one Temporal's
    status does not tell. A response that goes straight from its request to an end Temporal
    tells keeps none. The moments it lists tools or infers are never kept. A run started
    with the value set (by an API server before this rule, `created`) keeps its end, as it
    did."""
    if state in WAITING_STATES or state in UNTOLD_ENDS:
        return True
    return state in ENDS and kept is not None


def initial_search_attributes(model: str, previous_response_id: str | None) -> TypedSearchAttributes:
    pairs = [SearchAttributePair(RESPONSE_MODEL, model[:MODEL_CHARACTERS])]
    if previous_response_id:
        pairs.append(SearchAttributePair(PREVIOUS_RESPONSE_ID, previous_response_id))
    return TypedSearchAttributes(pairs)


def summary(model: str, first_words: str) -> str:
    """One line: the model and the first words of the input (`WORKFLOW_SUMMARY_INPUT`)."""
    words = " ".join(first_words.split())
    line = f"{model}: {words}" if words else model
    return line if len(line) <= SUMMARY_CHARACTERS else line[: SUMMARY_CHARACTERS - 1] + "…"


def tool_names(tools: Sequence[object]) -> list[str]:
    """Tools by type and name or server label (never their URLs or headers)."""
    named = (
        (getattr(tool, "type", ""), getattr(tool, "server_label", None) or getattr(tool, "name", None))
        for tool in tools
    )
    return [f"{kind}:{name}" if name else kind for kind, name in named]


def details(
    *, previous_response_id: str | None, tools: list[str], background: bool, stream: bool, conversation_id: str | None
) -> str:
    """Markdown lines that say what the response is (no secrets: tools by type and label),
    shown under its current state (`shown`)."""
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


def shown(now: str, about: str) -> str:
    """A workflow's current details: what it does `now`, then what the response is (`details`).

    What the response is was the workflow's static details, fixed at its start: the Temporal
    server stored them with every response's start, which cost a plain response 0.6-0.9 ms
    of `dev`'s CPU and 0.5-0.7 ms of the server's (`python -m bench.ab`, with the summary; six
    rounds each). The workflow knows them from its input: shown here, they cost nothing until
    an operator looks."""
    return f"{now}\n\n{about}" if about else now
