"""The house's packages (as `pyproject.toml` ships them, and its folders), and the imports between them, read
from the code (`ast`: every `import` and `from ... import`, in functions too; nothing run)."""

from __future__ import annotations

import ast
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def packages() -> list[str]:
    """The top-level packages the project installs (`[tool.setuptools] packages`)."""
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    return [name for name in listed if "." not in name]


def folders() -> list[str]:
    """The house's top-level packages: those installed and the benchmarks (`bench/`)."""
    return sorted(path.parent.name for path in ROOT.glob("*/__init__.py") if path.parent.name != "tests")


def imports_between_packages() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) -> the imports that make the arrow, as `file -> module`."""
    names = set(folders())
    arrows: dict[tuple[str, str], list[str]] = defaultdict(list)
    for package in sorted(names):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in names and top != package:
                        arrows[package, top].append(f"{path.relative_to(ROOT)} -> {module}")
    return dict(arrows)
