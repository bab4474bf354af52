"""Hypothesis strategies the tests share: file attributes and the filters over them."""

from hypothesis import strategies as st

TEXT = st.text(max_size=40)


ATTRIBUTE_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10_000),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
    st.lists(st.one_of(st.integers(), TEXT), max_size=3),
)


FILTERS = st.recursive(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "like"]),
            "key": st.one_of(TEXT, st.integers()),
            "value": ATTRIBUTE_VALUES,
        }
    ),
    lambda inner: st.fixed_dictionaries(
        {"type": st.sampled_from(["and", "or", "xor"]), "filters": st.lists(inner, max_size=3)}
    ),
    max_leaves=6,
)
