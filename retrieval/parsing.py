"""A file's text, by what its name says it is: plain text and Markdown as they are, HTML
without its markup, JSON pretty-printed, PDF through pypdf (text PDFs; a scan has no text to
read). Anything else, or a file that is not what its name says, is refused with the reason
a `vector_store.file`'s `last_error` reports (`unsupported_file`, `invalid_file`). A file whose
bytes hold NUL is not text, whatever its name; one in a PDF's extracted text is dropped: no
store keeps NUL in text (PostgreSQL refuses it), and it means nothing to a search."""

from __future__ import annotations

import io
import json
from html.parser import HTMLParser
from pathlib import PurePosixPath

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
SKIPPED_TAGS = frozenset({"script", "style", "head", "template", "noscript"})


def suffix_of(filename: str) -> str:
    return PurePosixPath(filename).suffix.lower()


def text_of(filename: str, content: bytes) -> str:
    """The file's text: never with a NUL in it."""
    return _read(filename, content).replace("\x00", "")


def _read(filename: str, content: bytes) -> str:
    suffix = suffix_of(filename)
    if suffix == ".pdf":
        return _pdf_text(content)
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
        return _html_text(text)
    if suffix == ".json":
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            raise UnreadableFileError(f"{filename!r} is not valid JSON", code="invalid_file") from None
    return text


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED_TAGS:
            self._skipping += 1
        elif tag in ("p", "br", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED_TAGS and self._skipping:
            self._skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def _html_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    parser.close()
    return "".join(parser.parts)


def _pdf_text(content: bytes) -> str:
    from pypdf import PdfReader  # 0.1 s to import: only where a PDF is read
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(content))
        return "\n\n".join(page.extract_text() or "" for page in reader.pages)
    except (PyPdfError, ValueError, KeyError, TypeError) as error:
        raise UnreadableFileError(f"the PDF could not be read: {error}", code="invalid_file") from None
