"""Web search settings, pure: they choose a provider, and refuse what cannot work."""

from __future__ import annotations

import pytest

from access.egress import EgressPolicy

LOCAL = EgressPolicy.parse("127.0.0.1")


def test_the_settings_choose_a_provider_and_refuse_what_cannot_work(monkeypatch: pytest.MonkeyPatch):
    from models.errors import StartupError
    from worker.settings import Settings

    monkeypatch.setenv("INFERENCE_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("WEB_SEARCH_PROVIDER", "searxng")
    monkeypatch.setenv("WEB_SEARCH_URL", "http://searxng.internal:8080")
    chosen = Settings.from_env()
    assert chosen.search().provider == "searxng" and chosen.execution.web_search
    assert chosen.search().described() == "web search: searxng at searxng.internal:8080"
    monkeypatch.setenv("WEB_SEARCH_PROVIDER", "tavily")
    with pytest.raises(StartupError, match="WEB_SEARCH_API_KEY"):
        Settings.from_env()
    monkeypatch.setenv("WEB_SEARCH_PROVIDER", "bing")
    with pytest.raises(StartupError, match="searxng, tavily, brave"):
        Settings.from_env()
    monkeypatch.setenv("WEB_SEARCH_PROVIDER", "off")
    assert not Settings.from_env().execution.web_search
    monkeypatch.setenv("INFERENCE_BASE_URL", "demo")  # the demo model searches the docs unless told otherwise
    assert not Settings.from_env().execution.web_search
    monkeypatch.delenv("WEB_SEARCH_PROVIDER")
    assert "searches this project's README and docs" in Settings.from_env().search().described()
