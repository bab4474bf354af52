"""Text a streamed reply grows by appending (`chat_completions/stream_assembler.py`)."""

from __future__ import annotations


class Text:
    """Text that grows by appending, in linear time: its pieces are joined only when the
    whole is asked for. (`str +=` on an attribute copies the whole string each time, which
    made a long reply quadratic: 200,000 words took 33 s.)"""

    __slots__ = ("_pieces", "length")

    def __init__(self, text: str = "") -> None:
        self._pieces = [text] if text else []
        self.length = len(text)

    def append(self, piece: str) -> None:
        if piece:
            self._pieces.append(piece)
            self.length += len(piece)

    def tail(self, characters: int) -> str:
        """The last `characters` characters, reading only the pieces that hold them."""
        taken: list[str] = []
        needed = characters
        for piece in reversed(self._pieces):
            if needed <= 0:
                break
            taken.append(piece[-needed:] if len(piece) > needed else piece)
            needed -= len(piece)
        return "".join(reversed(taken))

    def __str__(self) -> str:
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""
