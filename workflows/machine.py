"""The response state machine, declared as data. No Temporal, no I/O.

The workflow fires triggers; the machine guards them. An illegal trigger raises
`IllegalTransition` (a domain error), never `transitions.MachineError`, so the workflow can
fail the response cleanly instead of failing its task forever.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from transitions import Machine, MachineError

from models.errors import DurableResponsesError


class State(str, Enum):
    CREATED = "created"
    LISTING_TOOLS = "listing_tools"
    INFERRING = "inferring"
    CALLING_TOOLS = "calling_tools"
    AWAITING_APPROVAL = "awaiting_approval"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INCOMPLETE = "incomplete"


TERMINAL = (State.COMPLETED, State.FAILED, State.CANCELLED, State.INCOMPLETE)
LIVE = [state for state in State if state not in TERMINAL]

TRANSITIONS: list[dict[str, Any]] = [
    {"trigger": "list_tools", "source": State.CREATED, "dest": State.LISTING_TOOLS},
    {"trigger": "start", "source": [State.CREATED, State.LISTING_TOOLS], "dest": State.INFERRING},
    {"trigger": "execute_approved", "source": [State.CREATED, State.LISTING_TOOLS], "dest": State.CALLING_TOOLS},
    {"trigger": "run_tools", "source": [State.INFERRING, State.CALLING_TOOLS], "dest": State.CALLING_TOOLS},
    {"trigger": "tools_done", "source": State.CALLING_TOOLS, "dest": State.INFERRING},
    {"trigger": "request_approval", "source": [State.INFERRING, State.CALLING_TOOLS], "dest": State.AWAITING_APPROVAL},
    {"trigger": "approval_decided", "source": State.AWAITING_APPROVAL, "dest": State.CALLING_TOOLS},
    # From AWAITING_APPROVAL: the wait timed out; the request stays open for a follow-up.
    {
        "trigger": "complete",
        "source": [State.INFERRING, State.CALLING_TOOLS, State.AWAITING_APPROVAL],
        "dest": State.COMPLETED,
    },
    {"trigger": "truncate", "source": State.INFERRING, "dest": State.INCOMPLETE},
    # Steering input came: the response stops after its tools' results, before the next turn.
    {"trigger": "steer", "source": [State.INFERRING, State.CALLING_TOOLS], "dest": State.INCOMPLETE},
    # A guardrail blocked the turn's input or output (`workflows/moderation.py`), or a tool's
    # output (an MCP server's listing among them: `guardrails/tool_outputs.py`).
    {
        "trigger": "block",
        "source": [State.LISTING_TOOLS, State.INFERRING, State.CALLING_TOOLS],
        "dest": State.INCOMPLETE,
    },
    {"trigger": "fail", "source": LIVE, "dest": State.FAILED},
    {"trigger": "cancel", "source": LIVE, "dest": State.CANCELLED},
]

# What each state shows as the response's `status`.
RESPONSE_STATUS = {
    State.CREATED: "queued",
    State.LISTING_TOOLS: "in_progress",
    State.INFERRING: "in_progress",
    State.CALLING_TOOLS: "in_progress",
    State.AWAITING_APPROVAL: "in_progress",
    State.COMPLETED: "completed",
    State.FAILED: "failed",
    State.CANCELLED: "cancelled",
    State.INCOMPLETE: "incomplete",
}


class IllegalTransition(DurableResponsesError):
    def __init__(self, trigger: str, state: str) -> None:
        super().__init__(f"'{trigger}' is not allowed in state '{state}'")
        self.trigger = trigger
        self.state = state


# Built once: parsing the table is the costly part, and every workflow shares it. A response
# keeps only its own `state`; the machine reads and sets it on whichever response fires.
_MACHINE = Machine(
    model=None,
    states=State,
    transitions=TRANSITIONS,
    initial=State.CREATED,
    auto_transitions=False,
    send_event=False,
)


class ResponseMachine:
    """Holds one response's state; `fire` is the only way to change it."""

    def __init__(self) -> None:
        self.state = State.CREATED
        self.on_change: Callable[[State], None] | None = None
        """Told each new state (the workflow shows it in Temporal's UI)."""

    def fire(self, trigger: str) -> State:
        event = _MACHINE.events.get(trigger)
        if event is None:
            raise IllegalTransition(trigger, self.state.value)
        before = self.state
        try:
            event.trigger(self)
        except MachineError:
            raise IllegalTransition(trigger, self.state.value) from None
        if self.on_change is not None and self.state != before:
            self.on_change(self.state)
        return self.state

    @property
    def is_terminal(self) -> bool:
        return self.state in TERMINAL

    @property
    def response_status(self) -> str:
        return RESPONSE_STATUS[self.state]
