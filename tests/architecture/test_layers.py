"""The layers of docs/architecture.md, held: the core domain knows neither the API nor the
serving code, services speak no HTTP, and views, serializers, forms and admins take no locks
(the lock order's functions and `members_write` are called by services; docs/lock-order.md)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ["flagadmin", "groups", "users", "projects", "features", "overview", "client_api"]
APPS += ["evaluation", "frontend_api", "auth_saml"]


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


def called_names(source: Path) -> set[str]:
    """The names `source` calls, as functions (`f()`) or methods (`x.f()`)."""
    names = set()
    for node in ast.walk(ast.parse(source.read_text(), filename=str(source))):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name):
                names.add(node.func.id)
            elif isinstance(node.func, ast.Attribute):
                names.add(node.func.attr)
    return names


def test_core__imports_neither_the_api_nor_the_serving_code():
    core = (ROOT / "flagadmin" / "core").rglob("*.py")

    assert importing(core, "flagadmin.api", "flagadmin.serving") == {}


def test_services__import_nothing_of_drf():
    services = sources("services.py", "*_services.py")

    assert importing(services, "rest_framework") == {}


def test_services__import_nothing_of_the_api_layer():
    services = sources("services.py", "*_services.py")

    assert importing(services, "flagadmin.api") == {}


# The functions that take locks: rows locked by hand, the flags' lock order (`features.locks`),
# and the members' lock with what it holds (`flagadmin.core.locks`).
LOCKING_CALLS = {
    "select_for_update",
    "lock_flags",
    "lock_named_flags",
    "lock_flag_rows",
    "lock_flag_for_edit",
    "lock_flag_environment",
    "lock_strategy",
    "members_write",
    "hold",
    "lock_for_delete",
}
# Admins write members in `members_write`, the one way to take that lock (docs/lock-order.md);
# they take no other lock.
ADMIN_MAY_CALL = {"members_write", "hold", "lock_for_delete"}


def test_views_and_serializers__take_no_lock():
    modules = sources("*views.py", "*serializers.py")

    locking = {
        str(path.relative_to(ROOT)): sorted(called_names(path) & LOCKING_CALLS) for path in modules
    }

    assert {path: calls for path, calls in locking.items() if calls} == {}


def test_admins_and_forms__lock_only_in_a_write_of_members():
    modules = sources("admin*.py", "*forms.py")

    locking = {
        str(path.relative_to(ROOT)): sorted(called_names(path) & LOCKING_CALLS - ADMIN_MAY_CALL)
        for path in modules
    }

    assert {path: calls for path, calls in locking.items() if calls} == {}


def test_views_and_serializers__import_no_lock_module():
    modules = sources("*views.py", "*serializers.py")

    assert importing(modules, "features.locks", "flagadmin.core.locks") == {}


def test_admins_and_forms__import_no_flag_lock():
    modules = sources("admin*.py", "*forms.py")

    assert importing(modules, "features.locks") == {}
