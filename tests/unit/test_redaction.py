"""What a backend says reaches a tenant redacted (`chat_completions/redaction.py`): whatever it says,
no run of six characters of the deployment's key, no address, nothing masked like a key, and
at most a bounded length; words that are none of these stay."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from chat_completions.redaction import KEY_PART_CHARS, MAX_CHARS, redacted

KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", min_size=8, max_size=60)


@given(
    key=KEYS,
    before=st.text(max_size=300),
    after=st.text(max_size=300),
    cut=st.integers(0, 30),
    keep=st.integers(KEY_PART_CHARS, 60),
)
def test_no_part_of_the_key_survives(key: str, before: str, after: str, cut: int, keep: int):
    shown = key[cut : cut + keep]
    said = redacted(f"{before}{shown}{after}", [key])
    assert len(said) <= MAX_CHARS
    if len(shown) >= KEY_PART_CHARS:
        assert not any(key[start : start + KEY_PART_CHARS] in said for start in range(len(key) - KEY_PART_CHARS + 1))


def test_addresses_and_masked_keys_go_and_the_words_stay():
    said = redacted(
        "Incorrect API key provided: sk-proj-********abcd. See https://platform.openai.com/account/api-keys "
        "or http://10.0.0.5:8000/v1; Authorization: Bearer abc.def"
    )
    assert "Incorrect API key provided:" in said and "See" in said
    assert "http" not in said and "10.0.0.5" not in said and "abcd" not in said and "abc.def" not in said


def test_a_long_message_is_cut():
    assert len(redacted("x" * 100_000)) == MAX_CHARS
