"""What the Temporal UI and `temporal workflow list` show of a response: search attributes to
filter on, written once it is more than a request answered (`search_attributes_on`), a
summary fixed at start when the operator wants the input's first words shown, and as the
workflow's current details its state and what the response is. Pure values; the workflow and
the API server both use them.

Search attributes must be registered in the namespace (`dev` registers them; for another
cluster see the README). A namespace without them gets none set: the API server checks at
start and tells each workflow (`ExecutionSettings.search_attributes`).
"""

from __future__ import annotations

from collections.abc import Sequence

from temporalio.common import SearchAttributeKey, SearchAttributeUpdate

RESPONSE_STATE = SearchAttributeKey.for_keyword("ResponseState")
"""Where a running response waits (`calling_tools`, `awaiting_approval`), then how it ended;
or how it ended, when it ended `incomplete`, `failed` or `cancelled` without waiting
(`search_attributes_on`)."""
RESPONSE_MODEL = SearchAttributeKey.for_keyword("ResponseModel")
"""The model asked for, written with the response's first `ResponseState`."""
PREVIOUS_RESPONSE_ID = SearchAttributeKey.for_keyword("PreviousResponseId")
"""The response it follows, if any, written with its first `ResponseState`."""

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
    """Whether the response's new `state` goes into `ResponseState`, which holds `kept` now,
    in a run started with `ResponseModel` set (by an API server before `search_attributes_on`).

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


QUIET_END = "completed"
"""The end that Temporal's status tells alone (`Completed`): a response that reaches it
without having waited writes no search attribute."""


def search_attributes_on(
    state: str, *, kept: str | None, described: bool, model: str, previous_response_id: str | None
) -> list[SearchAttributeUpdate[str]]:
    """What the response writes to its search attributes as it enters `state`, when
    `ResponseState` holds `kept` and `ResponseModel` is set (`described`) or not.

    Nothing is set at a response's start. A response writes all three (`ResponseState`,
    `ResponseModel`, `PreviousResponseId`) in one upsert the first time it is more than a
    request answered: as it begins to wait for tools or an approval, or as it ends
    incomplete, failed or cancelled; from then on, its state as `state_is_kept` says. A
    response that goes straight from its request to its answer writes none: its workflow's
    id is its id, its status `Completed`. Set at every start, `ResponseModel` cost a plain
    response 0.53 ms of the Temporal server's CPU and 0.27 ms of `dev`'s (`python -m
    bench.ab` at concurrency 10, six rounds, every one better without it).

    A run started with `ResponseModel` set (by an API server before this rule) writes its
    state as it did (`state_is_kept`), so its history replays."""
    if described:  # by this rule's first upsert, or at the start by an older API server
        return [RESPONSE_STATE.value_set(state)] if state_is_kept(state, kept) else []
    if state not in WAITING_STATES and (state not in ENDS or state == QUIET_END):
        return []
    updates = [RESPONSE_STATE.value_set(state), RESPONSE_MODEL.value_set(model[:MODEL_CHARACTERS])]
    if previous_response_id:
        updates.append(PREVIOUS_RESPONSE_ID.value_set(previous_response_id))
    return updates


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
