"""The packages stand on floors (`docs/development.md`, "Layout"): each imports only from
floors below its own, so no two packages import each other and the house reads top to
bottom; and no modules import each other in a circle, inside a package either. An import that
runs up or sideways, or closes a circle, fails here, named by its modules."""

from __future__ import annotations

import re

from tests.support.house import ROOT, folders, imports_between_modules, imports_between_packages, packages

ROW = re.compile(r"^\| (?P<floor>\d+) \| (?P<packages>[^|]+) \|")
PACKAGE = re.compile(r"`([a-z_]+)/`")


def floors() -> dict[str, int]:
    """Each package -> its floor, as the layout table in `docs/development.md` says."""
    text = (ROOT / "docs" / "development.md").read_text()
    table = text[text.index("## Layout: packages as floors") :]
    placed: dict[str, int] = {}
    for line in table.splitlines():
        if row := ROW.match(line):
            for package in PACKAGE.findall(row["packages"]):
                assert package not in placed, f"{package}/ stands on two floors"
                placed[package] = int(row["floor"])
    return placed


def test_every_package_stands_on_a_floor() -> None:
    assert set(packages()) <= set(folders())
    assert sorted(floors()) == folders()


def test_every_import_runs_down() -> None:
    floor = floors()
    wrong = [
        f"{importer}/ (floor {floor[importer]}) imports {imported}/ (floor {floor[imported]}): {', '.join(arrows)}"
        for (importer, imported), arrows in sorted(imports_between_packages().items())
        if floor[imported] >= floor[importer]
    ]
    assert not wrong, "\n".join(wrong)


def test_no_modules_import_each_other_in_a_circle() -> None:
    arrows = imports_between_modules()
    done: set[str] = set()

    def circle_from(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return None
        for imported in sorted(arrows[module]):
            if found := circle_from(imported, [*path, module]):
                return found
        done.add(module)
        return None

    for module in sorted(arrows):
        circle = circle_from(module, [])
        assert circle is None, " -> ".join(circle)


HUB_HOLDERS = {
    "worker.temporal": "wires each activity class to the parts of the store it uses",
    "worker.roles": "opens the store and hands its parts to the chores",
    "worker.code_execution": "wires the container activities and chores",
    "worker.http_app": "opens the store for the HTTP app",
    "http_plumbing.params": "the routes' reach to the app's store: each takes one part of it",
    "websocket_mode.connection": "a connection's requests are prepared like any other",
    "response_service.preparation": "a request may name anything the store holds",
    "bench.file_search": "fills a store to search it",
}
"""The modules that hold the store's hub (`store/repository.py`), and why; every other one
takes the parts it uses (`docs/development.md`, "The store's hub")."""


def test_only_the_wiring_holds_the_store_hub() -> None:
    holders = {module for module, imported in imports_between_modules().items() if "store.repository" in imported}
    assert holders <= set(HUB_HOLDERS), (
        f"take the parts of the store you use, not the hub: {holders - set(HUB_HOLDERS)}"
    )
    assert set(HUB_HOLDERS) <= holders, f"no longer holds the hub: {set(HUB_HOLDERS) - holders}"
