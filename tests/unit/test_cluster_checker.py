"""The bed's checker (`bench/cluster/checker.py`) names each property a history breaks, and
none of a history that keeps them all."""

from __future__ import annotations

from collections import Counter

from bench.cluster.checker import check
from bench.cluster.history import (
    Answer,
    ConversationRead,
    Delivery,
    Fault,
    Final,
    Operation,
    SteerRead,
    ToolCall,
    UpstreamCall,
)


def _approved(key: str, text: str = "") -> tuple[Operation, Final]:
    operation = Operation(
        id=key, kind="approval", start=100.0, end=110.0, response_ids=[f"resp_{key}"], approved_key=key,
        expected_text=f"done: wrote {key}",
    )  # fmt: skip
    return operation, Final(response_id=f"resp_{key}", status="completed", output_text=text or f"done: wrote {key}")


def _write(key: str) -> ToolCall:
    return ToolCall(time=105.0, tool="write_note", arguments={"key": key, "text": "t"}, meta={})


def _properties(violations: list[dict]) -> list[str]:
    return sorted(violation["property"] for violation in violations)


def test_a_history_that_keeps_every_property_has_no_violation():
    operation, final = _approved("op1")
    text = Operation(id="op2", kind="text", start=100, end=101, response_ids=["resp_t"], expected_text="echo: x")
    text.answers = [
        Answer(api="a", call="create", status=503, retry_after="1"),
        Answer(api="b", call="create", status=200),
    ]
    finals = [final, Final(response_id="resp_t", status="completed", output_text="echo: x", log_matches=True)]
    cut_off, cut_off_final = _approved(
        "op3", "done: Error: The outcome of 'write_note' on MCP server 'bed' is unknown: an earlier attempt sent it"
    )  # its worker died after sending the call: said so, not sent again
    finals.append(cut_off_final)
    assert check([operation, text, cut_off], finals, [_write("op1"), _write("op3")], []) == []


def test_each_broken_property_is_named_with_its_operation_and_the_faults_around_it():
    twice, twice_final = _approved("op1")
    unseen, unseen_final = _approved("op2")
    lost = Operation(id="op3", kind="text", start=100, end=101, response_ids=["resp_lost"])
    wrong = Operation(id="op4", kind="text", start=100, end=101, response_ids=["resp_w"], expected_text="echo: a")
    wrong.answers = [Answer(api="a", call="create", status=500), Answer(api="a", call="create", status=503)]
    torn = Operation(id="op5", kind="stream", start=100, end=101, response_ids=["resp_torn", "resp_lost"])
    finals = [
        twice_final,
        unseen_final,
        Final(response_id="resp_lost", status=None),
        Final(response_id="resp_w", status="completed", output_text="echo: b"),
        Final(response_id="resp_torn", status="completed", log_matches=False),
    ]
    late, late_final = _approved("op6")
    late_final.rejected_at_end = True  # its approval never reached it: refused once healed
    finals.append(late_final)
    calls = [_write("op1"), _write("op1"), _write("nobody"), _write("op6")]
    faults = [
        Fault(kind="pause", targets=["worker-1"], start=104, end=112),
        Fault(kind="loss", targets=["x"], start=1, end=2),
    ]
    violations = check([twice, unseen, lost, wrong, torn, late], finals, calls, faults)
    assert _properties(violations) == [
        "answer", "approved_only", "approved_only", "at_most_once", "log_matches", "no_500", "no_500", "side_effect_seen",
        "terminal", "terminal", "unique_ids",
    ]  # fmt: skip
    at_most_once = next(violation for violation in violations if violation["property"] == "at_most_once")
    assert at_most_once["operations"] == ["op1"] and at_most_once["faults"] == ["pause worker-1"]


def _command(key: str, outputs: list[str], kind: str = "command") -> tuple[Operation, Final]:
    operation = Operation(id=key, kind=kind, start=100.0, end=110.0, response_ids=[f"resp_{key}"])
    return operation, Final(response_id=f"resp_{key}", status="completed", command_outputs=outputs)


def test_a_command_or_code_that_ran_twice_or_reported_a_run_its_container_never_noted_is_named():
    once = _command("op1", ["completed exit 0: ran op1"])
    lost = _command("op2", ["incomplete timeout : "])  # its host was lost: no run claimed, none noted
    twice = _command("op3", ["completed exit 0: ran op3"])
    unseen = _command("op4", ["completed exit 0: ran op4"])
    code_once = _command("op5", ["completed logs: ran op5"], kind="code")
    code_twice = _command("op6", ["completed logs: ran op6"], kind="code")
    code_unseen = _command("op7", ["completed logs: ran op7"], kind="code")
    operations, finals = zip(once, lost, twice, unseen, code_once, code_twice, code_unseen, strict=True)
    runs = Counter({"op1": 1, "op3": 2, "op5": 1, "op6": 2})
    violations = check(list(operations), list(finals), [], [], runs)
    assert [(violation["property"], violation["operations"]) for violation in violations] == [
        ("at_most_once", ["op3"]),
        ("side_effect_seen", ["op4"]),
        ("at_most_once", ["op6"]),
        ("side_effect_seen", ["op7"]),
    ]


def test_a_conversation_missing_a_turn_or_holding_one_twice_or_torn_is_named():
    def conversation(
        key: str, items: list[str], ids: list[str] | None = None
    ) -> tuple[Operation, list[Final], ConversationRead]:
        operation = Operation(
            id=key, kind="conversation", start=100, end=110, response_ids=[f"resp_{key}_1", f"resp_{key}_2"]
        )
        finals = [
            Final(response_id=f"resp_{key}_{turn}", status="completed", output_text=f"echo: {word} {key}")
            for turn, word in ((1, "first"), (2, "second"))
        ]
        read = ConversationRead(
            conversation_id=f"conv_{key}",
            operation_id=key,
            items=items,
            item_ids=ids or [str(n) for n in range(len(items))],
        )
        return operation, finals, read

    def turn(word: str, key: str) -> list[str]:
        return [f"user: {word} {key}", f"assistant: echo: {word} {key}"]

    whole = conversation("op1", turn("first", "op1") + turn("second", "op1"))
    missing = conversation("op2", turn("first", "op2"))
    twice = conversation("op3", turn("first", "op3") + turn("second", "op3"), ["a", "b", "c", "c"])
    torn = conversation("op4", ["user: first op4", *turn("second", "op4"), "assistant: echo: first op4"])
    swapped = conversation("op5", turn("second", "op5") + turn("first", "op5"))
    cases = [whole, missing, twice, torn, swapped]
    violations = check(
        [case[0] for case in cases],
        [final for case in cases for final in case[1]],
        [],
        [],
        None,
        [case[2] for case in cases],
    )
    assert sorted((violation["operations"][0], violation["detail"].split(": ", 1)[1]) for violation in violations) == [
        ("op2", "the completed turn 'second op2' is missing"),
        ("op3", "an item appears twice"),
        ("op4", "the answer to 'first op4' follows no input of it"),
        ("op4", "the completed turn 'first op4' is missing"),
        ("op5", "its turns are out of order"),
    ]


def test_an_end_never_delivered_or_delivered_under_two_ids_is_named():
    operations = [
        Operation(id=f"op{n}", kind="text", start=100, end=101, response_ids=[f"resp_{n}"]) for n in range(1, 5)
    ]
    finals = [Final(response_id=f"resp_{n}", status="completed") for n in range(1, 4)]
    finals.append(Final(response_id="resp_4", status=None))  # never ended: `terminal` names it, not this
    deliveries = [
        Delivery(time=1, id="evt_1", type="response.completed", response_id="resp_1"),
        Delivery(time=2, id="evt_1", type="response.completed", response_id="resp_1"),  # a retry: same id
        Delivery(time=1, id="evt_2", type="response.completed", response_id="resp_2"),
        Delivery(time=2, id="evt_2b", type="response.completed", response_id="resp_2"),
        Delivery(time=1, id="evt_3", type="response.failed", response_id="resp_3"),  # not how it ended
    ]
    violations = check(operations, finals, [], [], None, None, deliveries)
    assert sorted((violation["property"], violation["operations"][0]) for violation in violations) == [
        ("terminal", "op4"),
        ("webhook_delivered", "op2"),
        ("webhook_delivered", "op3"),
    ]


def test_an_accepted_steer_dropped_or_committed_twice_is_named():
    def steered(key: str, accepted: bool = True) -> Operation:
        return Operation(
            id=key, kind="steer", start=100, end=101, response_ids=[f"resp_{key}"], steered_id=f"resp_{key}",
            steer_accepted=accepted,
        )  # fmt: skip

    operations = [steered("op1"), steered("op2"), steered("op3"), steered("op4"), steered("op5", accepted=False)]
    finals = [Final(response_id=f"resp_op{n}", status="incomplete") for n in range(1, 6)]
    reads = [
        SteerRead(operation_id="op1", steered_id="resp_op1", successors=["s1"], statuses=["completed"], carrying=1),
        SteerRead(operation_id="op2", steered_id="resp_op2"),  # dropped: no successor
        SteerRead(
            operation_id="op3", steered_id="resp_op3", successors=["s3", "s3b"], statuses=["completed"] * 2, carrying=2
        ),
        SteerRead(operation_id="op4", steered_id="resp_op4", successors=["s4"], statuses=[None], carrying=1),
    ]
    violations = check(operations, finals, [], [], steers=reads)
    assert sorted((violation["property"], violation["operations"][0]) for violation in violations) == [
        ("steer_committed", "op2"),
        ("steer_committed", "op3"),
        ("terminal", "op4"),
    ]


def _streamed(key: str, kind: str, numbers: list[int], sent: str, status: str, kept: str) -> tuple[Operation, Final]:
    operation = Operation(
        id=key, kind=kind, start=100, end=101, response_ids=[f"resp_{key}"], sequence_numbers=numbers,
        streamed_text=sent, stream_ended=True,
    )  # fmt: skip
    return operation, Final(response_id=f"resp_{key}", status=status, output_text=kept)


def test_a_stream_with_a_gap_a_repeat_or_other_text_and_a_moderated_one_that_let_a_flag_through_are_named():
    whole, whole_final = _streamed("op1", "stream", [0, 1, 2, 3], "echo: a", "completed", "echo: a")
    held, held_final = _streamed("op2", "moderated", [0, 1, 2], "echo: calm.", "incomplete", "echo: calm.")
    cut, cut_final = _streamed("op3", "stream", [0, 1], "echo", "completed", "echo: a")
    cut.stream_ended = False  # given up before its end: what it got is the start of what was kept
    assert check([whole, held, cut], [whole_final, held_final, cut_final], [], []) == []

    gap, gap_final = _streamed("op4", "stream", [0, 1, 3, 4], "echo: a", "completed", "echo: a")
    repeat, repeat_final = _streamed("op5", "stream", [0, 1, 2, 2, 3], "echo: a", "completed", "echo: a")
    other, other_final = _streamed("op6", "stream", [0, 1], "echo: a", "completed", "echo: ab")
    sent, sent_final = _streamed("op7", "moderated", [0, 1], "echo: calm. Kill it.", "incomplete", "echo: calm.")
    completed, completed_final = _streamed("op8", "moderated", [0, 1], "echo: calm.", "completed", "echo: calm.")
    violations = check(
        [gap, repeat, other, sent, completed],
        [gap_final, repeat_final, other_final, sent_final, completed_final],
        [],
        [],
    )
    assert [(v["property"], v["operations"]) for v in violations] == [
        ("stream_whole", ["op4"]),
        ("stream_whole", ["op5"]),
        ("stream_whole", ["op6"]),
        ("stream_whole", ["op7"]),
        ("moderation_held", ["op7"]),
        ("moderation_held", ["op8"]),
    ]


def test_a_model_called_faster_than_its_budget_and_burst_is_named_and_one_called_within_it_is_not():
    def calls(model: str, count: int, seconds: float) -> list[UpstreamCall]:
        return [
            UpstreamCall(time=1000 + index * seconds / count, model=model, path="/v1/chat/completions")
            for index in range(count)
        ]

    # rpm 120: 2 a second, so 20 in 10 s, and the 3 s burst's 6 more, may come; a model with
    # no budget may come as fast as it likes.
    kept = calls("echo", 26, 10.0) + calls("drip", 200, 100.0)
    budgets = {"echo": 120, "drip": 120}
    assert check([], [], [], [], upstream=kept + calls("free", 100, 1.0), budgets=budgets) == []
    budgets["burst"] = 120
    violations = check([], [], [], [], upstream=kept + calls("burst", 27, 9.0), budgets=budgets)
    assert [(v["property"], v["detail"].split(":")[0]) for v in violations] == [("budget_kept", "burst")]
