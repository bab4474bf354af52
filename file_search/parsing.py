"""A file's text, by what its name says it is: plain text and Markdown as they are, HTML
without its markup, JSON written out flat, PDF through pypdf (text PDFs; a scan has no text
to read). Anything else, or a file that is not what its name says, is refused with the reason
a `vector_store.file`'s `last_error` reports (`unsupported_file`, `invalid_file`). A file whose
bytes hold NUL is not text, whatever its name; one in a PDF's extracted text is dropped: no
store keeps NUL in text (PostgreSQL refuses it), and it means nothing to a search.

Every reader here takes time linear in the file, and the text it makes is bounded
(`IngestionLimits`): at most `text_per_byte` characters a byte, and never more than
`max_text_chars`; JSON nests at most `max_json_depth` deep. HTML is read by a scanner of our
own: the standard library's `html.parser` takes quadratic time on unclosed tags and comments
(a 60 KB page of `<a ` took 28 s). Pure; it runs in the reader's process (`file_search/reader.py`).
"""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import PurePosixPath

from file_search.limits import LIMITS, IngestionLimits
from models.errors import UnreadableFileError

TEXT_SUFFIXES = frozenset(
    {
        ".txt",
        ".md",
        ".markdown",
        ".rst",
        ".csv",
        ".tsv",
        ".log",
        ".py",
        ".js",
        ".ts",
        ".java",
        ".c",
        ".cpp",
        ".h",
        ".cs",
        ".go",
        ".rb",
        ".php",
        ".sh",
        ".css",
        ".tex",
        ".yaml",
        ".yml",
        ".toml",
        ".xml",
    }
)
HTML_SUFFIXES = frozenset({".html", ".htm"})
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | {".json", ".pdf"}
SKIPPED_TAGS = ("script", "style", "head", "template", "noscript")
BLOCK_TAGS = frozenset(
    {"p", "br", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "table", "ul", "ol"}
)


def suffix_of(filename: str) -> str:
    return PurePosixPath(filename).suffix.lower()


def text_of(filename: str, content: bytes, limits: IngestionLimits = LIMITS) -> str:
    """The file's text: never with a NUL in it, never longer than `limits` allow for its size."""
    most = limits.max_text_of(len(content))
    text = _read(filename, content, limits, most).replace("\x00", "")
    if len(text) > most:
        raise _expands(filename, len(content), most)
    return text


def _expands(filename: str, size: int, most: int) -> UnreadableFileError:
    return UnreadableFileError(
        f"{filename!r} ({size} bytes) expands to more than {most} characters of text, the most a file of its size "
        "may make",
        code="invalid_file",
    )


def _read(filename: str, content: bytes, limits: IngestionLimits, most: int) -> str:
    suffix = suffix_of(filename)
    if suffix == ".pdf":
        return _pdf_text(filename, content, most)
    if suffix not in SUPPORTED_SUFFIXES:
        raise UnreadableFileError(
            f"files of type {suffix or '(none)'!r} cannot be searched; supported: "
            + ", ".join(sorted(SUPPORTED_SUFFIXES)),
            code="unsupported_file",
        )
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableFileError(f"{filename!r} is not UTF-8 text", code="invalid_file") from None
    if "\x00" in text:
        raise UnreadableFileError(f"{filename!r} holds NUL bytes: it is not text", code="invalid_file")
    if suffix in HTML_SUFFIXES:
        return html_text(text)
    if suffix == ".json":
        return json_text(filename, text, limits.max_json_depth)
    return text


# ---- JSON ------------------------------------------------------------------------------------


def json_text(filename: str, text: str, max_depth: int) -> str:
    """The document written out again on one line (`, ` and `: ` between its parts): what
    indenting would add grows with the depth of every line, so a deeply nested file would
    expand many times over."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(filename, max_depth) from None
    except ValueError:  # also a number of more digits than Python reads (`sys.int_info`)
        raise UnreadableFileError(f"{filename!r} is not valid JSON", code="invalid_file") from None
    if _depth(value) > max_depth:
        raise _too_deep(filename, max_depth)
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _too_deep(filename: str, max_depth: int) -> UnreadableFileError:
    return UnreadableFileError(f"{filename!r} nests arrays and objects more than {max_depth} deep", code="invalid_file")


def _depth(value: object) -> int:
    """How deep arrays and objects nest in `value`, counted without recursion."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        node, depth = pending.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


# ---- HTML ------------------------------------------------------------------------------------

_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]*)")
_HUGE_CHARACTER_REFERENCE = re.compile(r"&#[xX]?[0-9a-fA-F]{9,};?")
"""No character needs more than 7 digits; `html.unescape` would refuse a number this long."""


def _unescape(text: str) -> str:
    return html.unescape(_HUGE_CHARACTER_REFERENCE.sub("\ufffd", text)) if "&" in text else text


_SKIPPED_END = {tag: re.compile(rf"</{tag}\b", re.IGNORECASE) for tag in SKIPPED_TAGS}


def html_text(document: str) -> str:
    """The text of an HTML document: markup, comments and the insides of `SKIPPED_TAGS` left
    out, a line break for each block, entities decoded. One pass: each step moves past what
    it read or ends the scan (an unclosed tag or comment ends the text)."""
    parts: list[str] = []
    position, size = 0, len(document)
    while position < size:
        opening = document.find("<", position)
        if opening < 0:
            parts.append(_unescape(document[position:]))
            break
        parts.append(_unescape(document[position:opening]))
        if document.startswith("<!--", opening):
            end = document.find("-->", opening + 4)
            if end < 0:
                break
            position = end + 3
            continue
        tag = _TAG.match(document, opening)
        if tag is None:
            if document.startswith(("<!", "<?"), opening):  # a declaration or processing instruction
                end = document.find(">", opening)
                if end < 0:
                    break
                position = end + 1
            else:  # a `<` that opens nothing is text
                parts.append("<")
                position = opening + 1
            continue
        end = document.find(">", tag.end())
        if end < 0:
            break
        position = end + 1
        closing, name = tag.group(1), tag.group(2).lower()
        if name in _SKIPPED_END and not closing:
            skipped = _SKIPPED_END[name].search(document, position)
            if skipped is None:
                break
            end = document.find(">", skipped.end())
            if end < 0:
                break
            position = end + 1
        elif name in BLOCK_TAGS:
            parts.append("\n")
    return "".join(parts)


# ---- PDF -------------------------------------------------------------------------------------


def _pdf_text(filename: str, content: bytes, most: int) -> str:
    """The pages' text, page by page, stopped as soon as it is longer than `most` (a font map
    can make one byte into hundreds of characters)."""
    from pypdf import PdfReader  # 0.1 s to import: only where a PDF is read
    from pypdf.errors import PyPdfError

    pages: list[str] = []
    length = 0
    try:
        for page in PdfReader(io.BytesIO(content)).pages:
            text = page.extract_text() or ""
            length += len(text) + 2
            if length > most:
                raise _expands(filename, len(content), most)
            pages.append(text)
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as error:
        said = str(error)[:300] or type(error).__name__
        raise UnreadableFileError(f"the PDF could not be read: {said}", code="invalid_file") from None
    return "\n\n".join(pages)
