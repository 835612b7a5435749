"""The one-way import rule of docs/architecture.md, held: each app imports only the apps below
it. The root URL conf (`flagadmin/urls.py`) mounts every app and is the one exception."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What each app may import; `overview` and `frontend_api` are imported by nothing but the root URLs.
BELOW = {
    "flagadmin": set(),
    "groups": {"flagadmin"},
    "users": {"groups", "flagadmin"},
    "projects": {"groups", "flagadmin"},
    "definitions": {"flagadmin"},
    "features": {"definitions", "projects", "groups", "flagadmin"},
    "overview": {"definitions", "features", "projects", "groups", "flagadmin"},
    "client_api": {"definitions", "features", "projects", "groups", "flagadmin"},
    "evaluation": {"definitions", "client_api", "features", "projects", "groups", "flagadmin"},
    "frontend_api": {
        "definitions",
        "evaluation",
        "client_api",
        "features",
        "projects",
        "groups",
        "flagadmin",
    },
    "auth_saml": {"users", "groups", "flagadmin"},
}
ROOT_URLS = ROOT / "flagadmin" / "urls.py"


def imported_apps(source: Path) -> set[str]:
    """The apps of this project that `source` imports (absolute imports, at any depth)."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(), filename=str(source))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module)
    return {module.split(".")[0] for module in modules} & BELOW.keys()


@pytest.mark.parametrize("app", sorted(BELOW))
def test_import_rule__each_module__imports_only_the_apps_below_its_own(app: str):
    sources = [path for path in (ROOT / app).rglob("*.py") if path != ROOT_URLS]

    upward = {
        str(path.relative_to(ROOT)): sorted(imported_apps(path) - BELOW[app] - {app})
        for path in sources
    }

    assert {path: apps for path, apps in upward.items() if apps} == {}
