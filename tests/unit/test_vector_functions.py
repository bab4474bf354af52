"""The vector distance the SQLite store searches with: sqlite-vec where this Python's sqlite3
loads extensions, else the same function in Python. Both give the same distances, and the
store says which it has."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demo.lexical_embedder import LEXICAL_DIMENSIONS, lexical_vector
from store import vector_functions
from store.vector_bytes import to_bytes

loadable = pytest.mark.skipif(
    not vector_functions.extension_loadable(),
    reason="this Python's sqlite3 cannot load extensions (CI uses one that can)",
)


@loadable
def test_the_store_loads_sqlite_vec_where_it_can():
    connection = sqlite3.connect(":memory:")
    assert vector_functions.install(connection) == "sqlite-vec"
    assert connection.execute("SELECT vec_version()").fetchone()[0].startswith("v")


@loadable
@settings(max_examples=100, deadline=None)
@given(left=st.text(max_size=200), right=st.text(max_size=200))
def test_the_python_distance_is_sqlite_vecs(left: str, right: str):
    a, b = to_bytes(lexical_vector(left)), to_bytes(lexical_vector(right))
    fast = sqlite3.connect(":memory:")
    vector_functions.install(fast)
    expected = fast.execute("SELECT vec_distance_cosine(:a, :b)", {"a": a, "b": b}).fetchone()[0]
    if expected is None:  # a vector of no length (a text without words)
        assert vector_functions.cosine_distance(a, b) is None
        return
    assert vector_functions.cosine_distance(a, b) == pytest.approx(expected, abs=1e-5)


def test_without_the_extension_the_same_sql_runs_in_python(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(vector_functions, "extension_loadable", lambda: False)
    connection = sqlite3.connect(":memory:")
    assert vector_functions.install(connection) == "python"
    near = to_bytes(lexical_vector("water the tomatoes twice a week"))
    far = to_bytes(lexical_vector("the Andromeda galaxy is far away"))
    query = to_bytes(lexical_vector("how often to water tomatoes"))
    ranked = connection.execute(
        "SELECT name FROM (SELECT 'near' AS name, :near AS e UNION ALL SELECT 'far', :far) "
        "ORDER BY vec_distance_cosine(e, :q)",
        {"near": near, "far": far, "q": query},
    ).fetchall()
    assert [row[0] for row in ranked] == ["near", "far"]
    assert len(lexical_vector("x")) == LEXICAL_DIMENSIONS
