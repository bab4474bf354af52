"""Every `workflow.patched` id of the house, in one place, with when it came and when it may go.

A change to workflow code that would make a running response's history replay differently
goes behind `workflow.patched(ID)`: a response that started before the change takes the old
branch for as long as it runs, one that starts after it takes the new one (and records a
marker saying so). Each patch lives through three stages:

1. **patched**: `if workflow.patched(ID): new else: old`. Both branches stay while any
   response that started before the patch may still be running or replayed.
2. **deprecated**: `workflow.deprecate_patch(ID)` followed by the new branch alone, once
   no running workflow took the old branch: every response started before the patch has
   ended and its history has left the namespace (the namespace's retention after the last
   deploy that could start one; the longest a response can run is the approval timeout,
   `APPROVAL_TIMEOUT_SECONDS`, plus its turns). Histories recorded before the patch are then
   moved out of `tests/histories/` (they can no longer replay), and the patch's entry here
   says `deprecated` and since when.
3. **removed**: the `deprecate_patch` call and the entry go, once no running workflow was
   started by a deploy that still had the `patched` call: the same wait again, counted from
   the deploy that deprecated it.

Workflow code asks `taken(ID)`, never `workflow.patched` itself. A patch costs every run that
takes it a marker in its history and, from the SDK's core, an upsert of the
`TemporalChangeVersion` search attribute: a history event and a visibility write each. With
fourteen patches in force, a plain response paid five of each, a tenth of its CPU in the
Temporal server. A **baseline** folds the patches in force on its day into one. A run is told
its baseline by its **memo** (`start_memo()`, which every start of a workflow of ours carries,
and continue-as-new carries on): it takes every folded patch's new branch and records no
marker at all. A run started between the baseline and its memo (2026-11-27) holds the
baseline's own marker instead, and is asked it, with the same answer. A run from before the
baseline (replayed after a deploy) has neither, so each folded patch is asked as it was. A
run's memo is in its start event, and the Python SDK remembers a patch's answer for the whole
run, so the kinds never mix within one run. A patch that comes later is folded at once by a
new baseline that only the memo names (it never had a marker): new runs carry it, and a run
whose memo names an older baseline asks the patch itself, as any run asks a patch its
baseline does not fold. A folded patch moves through the stages above as before (its old
branch stays while a run that asks it may be running), and a baseline goes once every patch
it folds has.

`tests/unit/test_patches.py` keeps this list whole: every id used in `workflows/` is here and
every id here is used, every one stands in at least one recorded history (a branch no
history takes, by its marker or by its memo, is a branch no replay guards), every history
recorded since the memo carries a baseline there and holds no marker of a patch it folds, and
those between the first baseline and its memo hold its marker and no folded one. Histories
recorded before the baseline are kept in `tests/histories/before-baseline-2026-11-27/`,
those between it and its memo in `tests/histories/baseline-marker-2026-11-27/`, those of
paths a later patch changed, recorded under the first memo, in
`tests/histories/memo-baseline-2026-11-27/`, and all replay as long as the patches they
take do.
"""

from __future__ import annotations

from dataclasses import dataclass

from temporalio import workflow


@dataclass(frozen=True)
class Patch:
    id: str
    since: str
    """The day the patch came (the first deploy that took the new branch)."""
    what: str


STATE_SHOWN_IN_TEMPORAL = "state-shown-in-temporal"
ENDS_AS_THE_RESPONSE_ENDS = "ends-as-the-response-ends"
CANCEL_ENDS_AFTER_TEMPORAL_CANCEL = "cancel-ends-after-temporal-cancel"
TEMPORAL_CANCEL_SEEN_FIRST = "temporal-cancel-seen-first"
APPROVAL_WAITS_FOR_THE_WAIT = "approval-waits-for-the-wait"
TOOL_CALLS_END_BEFORE_A_CANCEL_IS_ANSWERED = "tool-calls-end-before-a-cancel-is-answered"
APPROVAL_WAITS_RECORDED = "approval-waits-recorded"
UPSTREAM_ATTEMPTS_SHOWN = "upstream-attempts-shown"
WEBHOOKS_SENT = "webhooks-sent"
UPSTREAM_CAPACITY_WAITS = "upstream-capacity-waits"
CONTINUES_AS_NEW = "continues-as-new"
RESULT_IS_ID_AND_STATUS = "result-is-id-and-status"
WEBHOOKS_OUTBOX = "webhooks-outbox"
INGESTION_RESUMES = "ingestion-resumes"
ENDS_IN_THE_CALL = "ends-in-the-call"

PATCHES = (
    Patch(STATE_SHOWN_IN_TEMPORAL, "2026-11-22", "the state machine's state shown in the UI"),
    Patch(ENDS_AS_THE_RESPONSE_ENDS, "2026-11-22", "Temporal's own status says failed or cancelled as the response"),
    Patch(CANCEL_ENDS_AFTER_TEMPORAL_CANCEL, "2026-11-22", "a cancel seen in the store waits for Temporal's"),
    Patch(TEMPORAL_CANCEL_SEEN_FIRST, "2026-11-22", "no wait when Temporal's cancel came first"),
    Patch(APPROVAL_WAITS_FOR_THE_WAIT, "2026-11-22", "a decision waits for a replaying worker's wait"),
    Patch(TOOL_CALLS_END_BEFORE_A_CANCEL_IS_ANSWERED, "2026-11-22", "a cancel waits for running tool calls"),
    Patch(APPROVAL_WAITS_RECORDED, "2026-11-22", "approval waits recorded in the store"),
    Patch(UPSTREAM_ATTEMPTS_SHOWN, "2026-11-22", "upstream retries shown in the workflow's details"),
    Patch(WEBHOOKS_SENT, "2026-11-22", "background responses send webhooks"),
    Patch(
        UPSTREAM_CAPACITY_WAITS,
        "2026-11-23",
        "capacity waits spend no attempt, backoff has jitter, fallbacks take over",
    ),
    Patch(CONTINUES_AS_NEW, "2026-11-24", "a long history continues as new between two turns"),
    Patch(RESULT_IS_ID_AND_STATUS, "2026-11-24", "the workflow's result is the id and the status"),
    Patch(WEBHOOKS_OUTBOX, "2026-11-24", "webhook events go into the outbox, not a child workflow each"),
    Patch(
        INGESTION_RESUMES,
        "2026-11-26",
        "a file's ingestion embeds the next batch after the last, continues as new, resumes from its chunks",
    ),
    Patch(ENDS_IN_THE_CALL, "2026-11-27", "a first turn's call writes the end of a response its answer ends"),
)
"""Every patch in force (stage 1), oldest first. None is deprecated yet."""

BASELINE_2026_11_27 = "baseline-2026-11-27"
"""The patches in force on the morning of 2026-11-27: in one marker, or in the memo."""

FOLDED = frozenset(patch.id for patch in PATCHES if patch.id != ENDS_IN_THE_CALL)
"""The patches the first baseline folds (a patch added after it is asked alone by a run whose
memo does not fold it)."""

BASELINE_2026_11_27_2 = "baseline-2026-11-27.2"
"""The first baseline and `ENDS_IN_THE_CALL`: by the memo alone (it has no marker)."""

BASELINES = (
    Patch(BASELINE_2026_11_27, "2026-11-27", "every patch before ENDS_IN_THE_CALL, in one marker or the memo"),
    Patch(BASELINE_2026_11_27_2, "2026-11-27", "every patch above, in the memo"),
)

FOLDED_BY_MEMO = {
    BASELINE_2026_11_27: FOLDED,
    BASELINE_2026_11_27_2: FOLDED | {ENDS_IN_THE_CALL},
}
"""What each baseline a memo may name folds: a run takes those patches without asking."""

BASELINE_MEMO = "patch-baseline"
"""The memo key that tells a run the baseline it started under."""


def start_memo() -> dict[str, str]:
    """The memo every start of one of our workflows carries: the newest baseline."""
    return {BASELINE_MEMO: BASELINE_2026_11_27_2}


def taken(patch_id: str) -> bool:
    """Whether this run takes the patch's new branch: one whose memo names a baseline that folds
    it, or (the first baseline's patches) one that holds that baseline's marker; any other asks
    the patch itself (`workflow.patched`)."""
    if patch_id in FOLDED_BY_MEMO.get(_memo_baseline(), frozenset()):
        return True
    if patch_id in FOLDED and workflow.patched(BASELINE_2026_11_27):
        return True
    return workflow.patched(patch_id)


def _memo_baseline() -> str:
    return workflow.memo_value(BASELINE_MEMO, "", type_hint=str)
