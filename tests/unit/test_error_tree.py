"""`models/errors.py`'s docstring draws the tree of every error the project raises on purpose:
each class that descends from `DurableResponsesError`, wherever it is defined, is in the
tree, under its own parent, and the tree names no class that does not exist."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import models.errors
from models.errors import DurableResponsesError
from tests.support.house import packages

ROOT = Path(__file__).parent.parent.parent
PACKAGES = packages()
LINE = re.compile(r"^(?P<indent>[ │├└─]*)(?P<name>[A-Z][A-Za-z]+(?:Error|Transition))\b")


def drawn_tree() -> dict[str, str | None]:
    """Each class the docstring names -> the class it is drawn under."""
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in (models.errors.__doc__ or "").splitlines():
        match = LINE.match(line.removeprefix("    "))
        if not match:
            continue
        depth = len(match.group("indent")) // 4
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[match.group("name")] = stack[-1][1] if stack else None
        stack.append((depth, match.group("name")))
    return parents


def every_error() -> dict[str, str]:
    """Every subclass of the root in the project's packages -> its parent's name."""
    for package in PACKAGES:
        for module in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
            if ".migrations" not in module.name:
                importlib.import_module(module.name)
    found: dict[str, str] = {}
    pending = [DurableResponsesError]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.split(".")[0] in PACKAGES:
                found[sub.__name__] = cls.__name__
                pending.append(sub)
    return found


def test_the_tree_lists_every_error_under_its_parent():
    drawn = drawn_tree()
    assert drawn.pop("DurableResponsesError") is None
    assert drawn == every_error()
