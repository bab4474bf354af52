"""Fixtures of the unit layer: a fresh SQLite store for the tests of store queries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from store.database import Database
from store.opening import open_database


@pytest.fixture
async def database(tmp_path: Path) -> AsyncIterator[Database]:
    """A migrated SQLite store of the test's own."""
    opened = open_database(f"sqlite:///{tmp_path / 'responses.db'}")
    await opened.migrate()
    yield opened
    await opened.close()
