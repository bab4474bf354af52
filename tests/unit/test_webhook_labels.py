"""The webhook metrics' endpoint label (`worker/webhooks.py`'s `labelled`): an operator's
endpoint by its name, the projects' endpoints together, so no id becomes a series."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worker.webhooks import PROJECTS_LABEL, labelled

endpoints = st.one_of(
    st.sampled_from(["up", "down", "audit"]), st.text("0123456789abcdef", min_size=8).map("we_".__add__)
)


@given(st.dictionaries(endpoints, st.integers(1, 1000)), st.sets(endpoints))
def test_the_projects_endpoints_are_counted_together_and_nothing_is_lost(
    backlog: dict[str, int], circuits: set[str]
) -> None:
    waiting, open_circuits = labelled(backlog, circuits)
    assert set(waiting) | set(open_circuits) <= {"up", "down", "audit", PROJECTS_LABEL}
    assert sum(waiting.values()) == sum(backlog.values())
    assert sum(open_circuits.values()) == len(circuits)
    for name in ("up", "down", "audit"):
        assert waiting.get(name) == backlog.get(name)
        assert open_circuits.get(name) == (1 if name in circuits else None)
