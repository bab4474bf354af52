"""A worker's slot counts from the environment: a whole number of at least one, or a start-up
error that names the variable."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.errors import StartupError
from worker.settings import Settings

SLOT_COUNTS = {
    "WORKER_CONCURRENT_RESPONSES": "worker_concurrent_responses",
    "MCP_CONCURRENT_CALLS": "mcp_concurrent_calls",
    "WEBHOOK_CONCURRENT_DELIVERIES": "webhook_concurrent_deliveries",
    "INGESTION_CONCURRENT_ACTIVITIES": "ingestion_concurrent_activities",
}


@given(variable=st.sampled_from(sorted(SLOT_COUNTS)), count=st.integers(min_value=-(10**6), max_value=10**6))
def test_a_slot_count_is_taken_when_at_least_one_and_refused_by_name_otherwise(variable: str, count: int) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("INFERENCE_BASE_URL", "http://127.0.0.1:9/v1")
        patch.setenv(variable, str(count))
        if count >= 1:
            assert getattr(Settings.from_env(), SLOT_COUNTS[variable]) == count
        else:
            with pytest.raises(StartupError, match=f"{variable} must be at least 1, not {count}"):
                Settings.from_env()


def test_by_default_a_worker_takes_as_many_responses_as_an_api_process_admits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INFERENCE_BASE_URL", "http://127.0.0.1:9/v1")
    settings = Settings.from_env()
    assert settings.worker_concurrent_responses == settings.max_in_flight_responses == 1000
