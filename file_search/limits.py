"""How much work one uploaded file may cause, in one record: its size, the text it may expand
to, how deep its JSON may nest, how many chunks it may make, and what the process that reads
it may spend (`sandbox/limits.py`'s record, shared with the code-execution sandbox).

A file past any of these fails its ingestion with `invalid_file` and a message naming the
limit; it is never retried (the same bytes fail the same way). `docs/security.md` lists
them with every other limit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sandbox.limits import ResourceLimits

MiB = 1024 * 1024


@dataclass(frozen=True)
class IngestionLimits:
    max_file_bytes: int = 32 * MiB
    """The largest upload `/v1/files` takes."""
    text_per_byte: int = 8
    """A file's text may hold this many characters per byte of the file (a compressed PDF holds
    several; a font map that turns one byte into hundreds is refused)..."""
    min_text_chars: int = 64 * 1024
    """...but a small file may always expand to this many..."""
    max_text_chars: int = 32 * MiB
    """...and no file to more than this many."""
    max_json_depth: int = 64
    """Arrays and objects within each other, as deep as a request body's JSON may nest."""
    max_chunks: int = 25_000
    """Chunks one file makes in one vector store (with the default chunking, about 40 MB of
    English text). Past it, larger chunks (`chunking_strategy.static`) make fewer."""
    reader: ResourceLimits = field(
        default_factory=lambda: ResourceLimits(
            cpu_seconds=120, memory_bytes=1024 * MiB, wall_seconds=300, output_bytes=256 * MiB, nice=10
        )
    )
    """What the process that reads and chunks one file may spend (`file_search/reader.py`)."""

    def max_text_of(self, size: int) -> int:
        """The most characters the text of a file of `size` bytes may have."""
        return min(self.max_text_chars, max(self.min_text_chars, self.text_per_byte * size))


LIMITS = IngestionLimits()
