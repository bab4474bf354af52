"""Per-model state is bounded by the names the server knows (`upstream/known_models.py`): a
client's made-up names become one "other" label and one "other" budget, however many it
sends (100 names once made 100 budget rows, read by every process every second, and 60 names
60 label values on an open /metrics); a budget that says nothing any more is not read, and
is deleted."""

from __future__ import annotations

import uuid

from store.database import Database
from telemetry.metrics import ModelLabels
from upstream import pacing
from upstream.budgets import Budgets
from upstream.known_models import OTHER, KnownModels
from upstream.pacing import Limits
from upstream.registry import ModelRegistry


def test_the_known_names_are_bounded_and_the_first_learned_stay():
    known = KnownModels(limit=3)
    known.learn(["a", "b"])
    known.learn(["c", "d", "e"])
    assert [known.shown(name) for name in "abcde"] == ["a", "b", "c", OTHER, OTHER]


def test_made_up_names_are_one_label():
    known = KnownModels()
    known.learn(["gpt-4o"])
    labels = ModelLabels()
    assert labels("gpt-4o") == "other"  # until told whom to follow
    labels.follow(known.knows)
    assert labels("gpt-4o") == "gpt-4o"
    assert {labels(f"made-up-{uuid.uuid4().hex}") for _ in range(60)} == {"other"}


def test_a_star_deployment_keeps_a_budget_per_known_name_and_one_for_the_rest():
    from upstream.known_models import KNOWN

    KNOWN.learn(["listed-by-the-backend"])
    deployment = ModelRegistry.single("http://backend/v1").deployments[0]
    assert deployment.budget_key("listed-by-the-backend") == "default:listed-by-the-backend"
    keys = {deployment.budget_key(f"made-up-{uuid.uuid4().hex}") for _ in range(100)}
    assert keys == {"default:other"}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_a_budget_that_says_nothing_any_more_is_not_read_and_is_deleted(database: Database):
    clock = Clock()
    budgets = Budgets(database, clock)
    limits = Limits(rate=1.0)
    for name in ("paced", "learned"):
        await budgets.reserve(name, limits, "interactive", "p")
    await budgets.rate_limited("learned", Limits(), retry_after=1.0, sending_rate=5.0, provider_rate=None)
    assert set(await budgets.states()) == {"paced", "learned"}

    clock.now += 60  # the paced one's next slot has passed: it says nothing now
    assert set(await budgets.states()) == {"learned"}
    assert await budgets.forget_idle() >= 1
    clock.now += pacing.FORGET_AFTER_SECONDS + 1  # and the learned rate is forgotten
    assert await budgets.states() == {}
    assert await budgets.forget_idle() >= 1
    async with database.read() as transaction:
        assert await transaction.value("SELECT count(*) FROM upstream_budgets") == 0
        assert await transaction.value("SELECT count(*) FROM upstream_queues") == 0
