"""The layers of docs/architecture.md, held: the core domain knows neither the API nor the
serving code, and services speak no HTTP."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ["flagadmin", "groups", "users", "projects", "features", "overview", "client_api"]
APPS += ["evaluation", "frontend_api", "auth_saml"]

# Services that still import the API layer, each its owner's to move (none may be added).
SERVICES_IMPORTING_THE_API = {"features/metrics_services.py"}


def sources(*patterns: str) -> Iterator[Path]:
    for app in APPS:
        for pattern in patterns:
            for path in sorted((ROOT / app).rglob(pattern)):
                if "migrations" not in path.parts:
                    yield path


def imported_modules(source: Path) -> set[str]:
    """Every module `source` imports by absolute name, at any depth (`from a import b` counts
    as `a` and `a.b`)."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(), filename=str(source))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def importing(paths: Iterator[Path], *packages: str) -> dict[str, list[str]]:
    """The modules of `paths` that import one of `packages` (or a module in one), with what."""
    found = {}
    for path in paths:
        hits = sorted(
            module
            for module in imported_modules(path)
            if any(module == package or module.startswith(package + ".") for package in packages)
        )
        if hits:
            found[str(path.relative_to(ROOT))] = hits
    return found


def test_core__imports_neither_the_api_nor_the_serving_code():
    core = (ROOT / "flagadmin" / "core").rglob("*.py")

    assert importing(core, "flagadmin.api", "flagadmin.serving") == {}


def test_services__import_nothing_of_drf():
    services = sources("services.py", "*_services.py")

    assert importing(services, "rest_framework") == {}


def test_services__import_nothing_of_the_api_layer():
    services = sources("services.py", "*_services.py")

    found = importing(services, "flagadmin.api")

    assert set(found) - SERVICES_IMPORTING_THE_API == set(), found
