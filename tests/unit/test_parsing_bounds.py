"""A file's reading is linear and bounded, whatever it holds: runs of blanks, unclosed tags and
comments, deep nesting, font maps that turn a byte into hundreds of characters. Each attack
the review found has its test here (each failed before the change: the chunker took 11 s on
32 KB of blanks, `html.parser` 28 s on 60 KB of `<a `, JSON at depth 990 raised
`RecursionError` and indentation turned 22 KB into 21 MB, a 2 KB PDF made 25 MB of text),
and Hypothesis looks for more: adversarial documents made of short patterns repeated, each
read within a time bound per byte, each text within its bound for the file's size."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from file_search.chunking import TooManyChunksError, chunks_of
from file_search.limits import LIMITS, IngestionLimits
from file_search.parsing import html_text, text_of
from models.errors import UnreadableFileError
from tests.support.documents import pdf_with_font_map

SECONDS_PER_BYTE = 30e-6
"""A generous bound (the readers take 0.1 to 2 µs a byte): a quadratic reader passes it only
on inputs too small to matter, and the inputs here are not."""


def fastest(work, runs: int = 3) -> float:  # noqa: ANN001
    """The fastest of a few runs, in this thread's CPU time (one run paused by another process
    is not a quadratic cost)."""
    timings = []
    for _ in range(runs):
        began = time.thread_time()
        work()
        timings.append(time.thread_time() - began)
    return min(timings)


def read_and_chunk(filename: str, content: bytes) -> None:
    try:
        chunks_of(text_of(filename, content), 100, 50)
    except UnreadableFileError:
        pass


# ---- the review's attacks ----------------------------------------------------------------------


def test_a_run_of_blanks_is_chunked_in_linear_time():
    small = fastest(lambda: chunks_of("a" + " " * 8_000))
    large = fastest(lambda: chunks_of("a" + " " * 128_000))
    # Sixteen times the blanks: linear takes about sixteen times as long (before: 256 times, 11 s at 32 KB).
    assert large < 48 * small + 0.05, (small, large)


@pytest.mark.parametrize("piece", ["<a ", "<!--", "<![CDATA[", "<?", "<", "&#", "<script>", "</"])
def test_html_is_read_in_linear_time(piece: str):
    small = fastest(lambda: html_text(piece * 5_000))
    large = fastest(lambda: html_text(piece * 80_000))
    assert large < 48 * small + 0.05, (piece, small, large)


def test_html_keeps_text_and_leaves_markup_out():
    page = (
        "<html><head><title>t</title><style>p{}</style></head><body><h1>Title</h1><p>One &amp; two"
        "<script>var x = '<p>';</script> three</p><!-- note --><p>4 &lt; 5</p></body></html>"
    )
    assert html_text(page).split() == ["Title", "One", "&", "two", "three", "4", "<", "5"]


def test_an_unclosed_tag_or_comment_ends_the_text():
    assert html_text("before <a href='x").strip() == "before"
    assert html_text("before <!-- never closed <p>hidden").strip() == "before"
    assert html_text("a < b and c<3").strip() == "a < b and c<3"


def test_a_character_reference_of_many_digits_is_not_an_error():
    assert html_text("x &#" + "1" * 5000 + "; y").split() == ["x", "\ufffd", "y"]


@pytest.mark.parametrize("depth", [990, 100_000])
def test_json_nested_past_its_depth_is_refused_not_a_recursion_error(depth: int):
    with pytest.raises(UnreadableFileError) as refused:
        text_of("deep.json", b"[" * depth + b"]" * depth)
    assert refused.value.code == "invalid_file" and "deep" in refused.value.message


def test_nested_json_is_written_out_without_indentation_that_grows_with_depth():
    levels = LIMITS.max_json_depth // 2 - 1  # an array and an object a level: within the depth
    nested = ('[{"key": ' * levels + "1" + "}]" * levels).encode()
    content = b"[" + b", ".join([nested] * 200) + b"]"
    # Indented two spaces a level, this was 34 times its size (22 KB made 21 MB at depth 990).
    assert len(text_of("nested.json", content)) <= 2 * len(content)
    assert text_of("plain.json", b'{"a": [1, 2], "b": "c"}') == '{"a": [1, 2], "b": "c"}'


def test_a_pdf_whose_font_map_multiplies_its_text_is_refused():
    content = pdf_with_font_map(2_000)  # 2 KB of shown bytes, 512,000 characters of text
    with pytest.raises(UnreadableFileError) as refused:
        text_of("font.pdf", content)
    assert refused.value.code == "invalid_file" and "expands" in refused.value.message


def test_a_small_pdf_with_a_font_map_within_the_bound_is_read():
    assert len(text_of("font.pdf", pdf_with_font_map(40))) == 40 * 256


def test_a_text_past_the_chunks_one_file_may_make_is_refused():
    with pytest.raises(TooManyChunksError):
        chunks_of("word " * 10_000, 100, 50, max_chunks=100)
    assert len(chunks_of("word " * 1_000, 100, 50, max_chunks=100)) <= 100


def test_a_file_may_expand_only_so_far_for_its_size():
    limits = IngestionLimits()
    assert limits.max_text_of(10) == limits.min_text_chars
    assert limits.max_text_of(1024 * 1024) == 8 * 1024 * 1024
    assert limits.max_text_of(limits.max_file_bytes) == limits.max_text_chars


# ---- what Hypothesis finds ---------------------------------------------------------------------

PIECES = [
    " ",
    "\n",
    "\t",
    "a",
    "é",
    "0",
    "<",
    ">",
    "<a ",
    "</",
    "<!--",
    "-->",
    "<!",
    "<?",
    "<script>",
    "</script>",
    "&",
    "&#",
    "&amp;",
    '"',
    "'",
    "\\",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
]


@st.composite
def adversarial(draw: st.DrawFn) -> tuple[str, bytes]:
    """A document of a short pattern repeated until it is tens of kilobytes (repetition is
    what turns a quadratic step into seconds), with a suffix that picks its reader."""
    pattern = "".join(draw(st.lists(st.sampled_from(PIECES), min_size=1, max_size=6)))
    size = draw(st.integers(min_value=16_000, max_value=64_000))
    head = draw(st.sampled_from(["", "<html><body>", "[", '{"a": "', "a"]))
    body = (head + pattern * (size // len(pattern) + 1))[:size]
    suffix = draw(st.sampled_from([".txt", ".md", ".html", ".json", ".csv"]))
    return f"attack{suffix}", body.encode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(adversarial())
def test_every_reader_takes_time_linear_in_the_file(document: tuple[str, bytes]):
    filename, content = document
    took = fastest(lambda: read_and_chunk(filename, content), runs=2)
    assert took < SECONDS_PER_BYTE * len(content) + 0.05, (filename, content[:40], took)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([".txt", ".html", ".json", ".md", ".pdf", ".bin"]),
    st.binary(max_size=2048) | st.text(max_size=2048).map(str.encode),
)
def test_every_text_is_within_its_bound_or_refused(suffix: str, content: bytes):
    limits = IngestionLimits(min_text_chars=64)
    try:
        text = text_of(f"any{suffix}", content, limits)
    except UnreadableFileError as refused:
        assert refused.code in ("invalid_file", "unsupported_file")
        return
    assert len(text) <= limits.max_text_of(len(content)) and "\x00" not in text
