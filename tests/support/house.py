"""The house's packages (as `pyproject.toml` ships them, and its folders), and the imports
between its modules, read from the code (`ast`: every `import` and `from ... import`, in
functions too; nothing run)."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections import defaultdict
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def packages() -> list[str]:
    """The top-level packages the project installs (`[tool.setuptools] packages`)."""
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    return [name for name in listed if "." not in name]


def folders() -> list[str]:
    """The house's top-level packages: those installed and the benchmarks (`bench/`)."""
    return sorted(path.parent.name for path in ROOT.glob("*/__init__.py") if path.parent.name != "tests")


def modules_loaded_by(*modules: str) -> set[str]:
    """Every module a fresh interpreter holds once it has imported `modules` (run, not read)."""
    code = f"import sys, {', '.join(modules)}; print(' '.join(sys.modules))"
    listed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(listed.split())


@cache
def imports_between_modules() -> dict[str, set[str]]:
    """Each module of the house -> the modules of the house it imports (`from a import b`
    counts `a.b` when that is a module, else `a`)."""
    modules = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
        for package in folders()
        for path in sorted((ROOT / package).rglob("*.py"))
    }
    arrows: dict[str, set[str]] = {module: set() for module in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found = [
                    f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                    for alias in node.names
                ]
            else:
                continue
            arrows[module].update(name for name in found if name in modules and name != module)
    return arrows


def imports_between_packages() -> dict[tuple[str, str], list[str]]:
    """(importer, imported) -> the imports that make the arrow, as `module -> module`."""
    arrows: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module, imported in sorted(imports_between_modules().items()):
        for name in sorted(imported):
            importer, target = module.split(".")[0], name.split(".")[0]
            if importer != target:
                arrows[importer, target].append(f"{module} -> {name}")
    return dict(arrows)
