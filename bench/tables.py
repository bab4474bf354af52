"""The Markdown the benchmarks print: a table row, a time in ms."""

from __future__ import annotations


def row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def ms(value: float) -> str:
    return f"{value:.1f} ms"
