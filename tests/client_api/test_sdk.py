"""The official Unleash SDKs, unchanged, against the served app (issue 11's scenario): the
Python SDK (`UnleashClient`, a dev dependency) and the Node SDK (`unleash-client`, installed by
`npm ci` in tests/sdk/node from its package-lock.json; Node itself comes from Debian, installed by
.ci/run). Each test runs one SDK once: it fetches /api/client/features, evaluates a flag for some
contexts, and sends its metrics when it stops."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from flagadmin.core.models import TokenType
from tests.factories import make_token

# The served app sees the test's commits; each test starts with the seeded rows (the default
# project and its environments) restored.
pytestmark = [
    pytest.mark.usefixtures("seeded_rows_back_after_module"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

NODE_DIR = Path(__file__).resolve().parents[1] / "sdk" / "node"
FEATURES = "/api/admin/projects/default/features"
FLAG = "sdk-checkout"
ALICE, BOB = {"userId": "alice"}, {"userId": "bob"}
# Unleash 8.2 has no userWithId strategy any more: a constraint names the users.
ONLY_ALICE = {
    "name": "flexibleRollout",
    "parameters": {"rollout": "100"},
    "constraints": [{"contextName": "userId", "operator": "IN", "values": ["alice"]}],
}


@pytest.fixture(scope="session")
def node_sdk() -> Path:
    """The Node SDK, installed from tests/sdk/node/package-lock.json when it is not yet."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js and npm are not installed (.ci/run installs Debian's nodejs and npm)")
    installed = NODE_DIR / "node_modules" / "unleash-client" / "package.json"
    if not installed.exists():
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, capture_output=True
        )
    return NODE_DIR / "evaluate.js"


def evaluate_python(
    server: str,
    token: str,
    contexts: list[dict],
    tmp_path: Path,
    flag: str = FLAG,
    project: str | None = None,
    variants: bool = False,
) -> list[bool] | list[str]:
    from UnleashClient import UnleashClient
    from UnleashClient.utils import InstanceAllowType

    client = UnleashClient(
        url=f"{server}/api",
        app_name="flagadmin-sdk-test-python",
        custom_headers={"Authorization": token},
        refresh_interval=60,
        metrics_interval=60,
        cache_directory=str(tmp_path / "unleash-cache"),
        multiple_instance_mode=InstanceAllowType.SILENTLY_ALLOW,
        project_name=project,
    )
    client.initialize_client()  # registers and fetches the flags before it returns
    try:
        if variants:
            return [client.get_variant(flag, context)["name"] for context in contexts]
        return [client.is_enabled(flag, context) for context in contexts]
    finally:
        client.destroy()  # sends the metrics it collected


def evaluate_node(
    script: Path,
    server: str,
    token: str,
    contexts: list[dict],
    flag: str = FLAG,
    project: str | None = None,
    variants: bool = False,
) -> list[bool] | list[str]:
    arguments = {
        "url": f"{server}/api/",
        "token": token,
        "flag": flag,
        "contexts": contexts,
        "projectName": project,
        "variants": variants,
    }
    done = subprocess.run(
        ["node", str(script), json.dumps(arguments)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(params=["python", "node"])
def evaluate(request, live_server, tmp_path):
    """`evaluate(contexts)`: what the SDK answers for the flag in each context, in
    `development`, through a client token of project `default` (`projects`: another token's
    projects; `flag`: another flag; `project`: the SDK's own project option; `variants`: the
    variant's name in each context instead)."""

    def run(contexts, *, projects=("default",), flag=FLAG, project=None, variants=False):
        token = make_token(TokenType.CLIENT, projects=list(projects), environment="development")
        if request.param == "node":
            script = request.getfixturevalue("node_sdk")
            return evaluate_node(
                script, live_server.url, token[1], contexts, flag, project, variants
            )
        return evaluate_python(
            live_server.url, token[1], contexts, tmp_path, flag, project, variants
        )

    return run


@pytest.fixture
def admin() -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=make_token(TokenType.ADMIN)[1])
    return client


def call(client: APIClient, method: str, url: str, body: dict | None = None) -> dict:
    response = getattr(client, method)(
        url, json.dumps(body) if body is not None else None, content_type="application/json"
    )
    assert response.status_code < 300, response.content
    return response.json() if response.content else {}


@pytest.fixture
def flag(admin) -> str:
    call(admin, "post", FEATURES, {"name": FLAG})
    return FLAG


def strategies_url(environment: str = "development") -> str:
    return f"{FEATURES}/{FLAG}/environments/{environment}/strategies"


def turn(admin: APIClient, state: str) -> None:
    call(admin, "post", f"{FEATURES}/{FLAG}/environments/development/{state}")


def test_sdk__new_flag__off(evaluate, flag):
    assert evaluate([{}, ALICE]) == [False, False]


def test_sdk__on_with_default__on(evaluate, admin, flag):
    call(admin, "post", strategies_url(), {"name": "default"})
    turn(admin, "on")

    assert evaluate([{}, ALICE, BOB]) == [True, True, True]


def test_sdk__on_in_production_only__off_in_development(evaluate, admin, flag):
    call(admin, "post", f"{FEATURES}/{FLAG}/environments/production/on")

    assert evaluate([ALICE]) == [False]


def test_sdk__flexible_rollout_0_then_100(evaluate, admin, flag):
    strategy = call(
        admin, "post", strategies_url(), {"name": "flexibleRollout", "parameters": {"rollout": "0"}}
    )
    turn(admin, "on")
    at_zero = evaluate([ALICE, BOB, {"userId": "carol"}])

    call(
        admin,
        "put",
        f"{strategies_url()}/{strategy['id']}",
        {"name": "flexibleRollout", "parameters": {"rollout": "100"}},
    )
    at_hundred = evaluate([ALICE, BOB, {"userId": "carol"}])

    assert (at_zero, at_hundred) == ([False, False, False], [True, True, True])


def test_sdk__user_with_id__on_only_for_that_user(evaluate, admin, flag):
    call(admin, "post", strategies_url(), ONLY_ALICE)
    turn(admin, "on")

    assert evaluate([ALICE, BOB, {}]) == [True, False, False]


def test_sdk__turned_off_again__off(evaluate, admin, flag):
    call(admin, "post", strategies_url(), {"name": "default"})
    turn(admin, "on")
    before = evaluate([ALICE])

    turn(admin, "off")

    assert (before, evaluate([ALICE])) == ([True], [False])


def test_sdk__metrics__project_shows_last_reported_usage(evaluate, admin, flag):
    def usage() -> str | None:
        projects = call(admin, "get", "/api/admin/projects")["projects"]
        return next(p for p in projects if p["id"] == "default")["lastReportedFlagUsage"]

    assert usage() is None

    evaluate([ALICE, BOB])  # the SDK sends its metrics as it stops

    # The SDKs post in the background while stopping; wait for the post, not for a time.
    deadline = time.monotonic() + 30
    while usage() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    reported = usage()
    assert reported is not None
    detail = call(admin, "get", f"{FEATURES}/{FLAG}")
    development = next(e for e in detail["environments"] if e["name"] == "development")
    assert development["lastSeenAt"] == reported


def test_sdk__project_option__only_that_projects_flags(evaluate, admin, flag):
    # The SDKs' project option (Python `project_name`, Node `projectName`) sends `?project=`;
    # with a token of every project, the SDK then knows that project's flags only.
    call(admin, "post", "/api/admin/projects", {"id": "sdk-other", "name": "SDK other"})
    call(admin, "post", "/api/admin/projects/sdk-other/features", {"name": "sdk-elsewhere"})
    for project, name in [("default", FLAG), ("sdk-other", "sdk-elsewhere")]:
        call(
            admin,
            "post",
            f"/api/admin/projects/{project}/features/{name}/environments/development/on",
        )

    every = {"projects": ["*"]}
    assert evaluate([ALICE], **every, flag=FLAG) == [True]
    assert evaluate([ALICE], **every, flag=FLAG, project="sdk-other") == [False]
    assert evaluate([ALICE], **every, flag="sdk-elsewhere", project="sdk-other") == [True]


USERS = [{"userId": f"user-{number}"} for number in range(300)]


def test_sdk__pausing_the_only_strategy__off_for_everyone(evaluate, admin, flag):
    rollout = {"name": "flexibleRollout", "parameters": {"rollout": "33", "stickiness": "userId"}}
    strategy = call(admin, "post", strategies_url(), rollout)
    turn(admin, "on")
    before = evaluate(USERS)

    call(admin, "put", f"{strategies_url()}/{strategy['id']}", {**rollout, "disabled": True})

    assert 60 < sum(before) < 140  # about a third
    assert evaluate(USERS) == [False] * len(USERS)


def test_sdk__on_with_only_paused_strategies__default_serves_everyone(evaluate, admin, flag):
    call(admin, "post", strategies_url(), {**ONLY_ALICE, "disabled": True})

    turn(admin, "on")

    assert evaluate([ALICE, BOB, {}]) == [True, True, True]


def test_sdk__on_activating_paused_strategies__their_audience_only(evaluate, admin, flag):
    call(admin, "post", strategies_url(), {**ONLY_ALICE, "disabled": True})

    call(
        admin,
        "post",
        f"{FEATURES}/{FLAG}/environments/development/on?shouldActivateDisabledStrategies=true",
    )

    assert evaluate([ALICE, BOB, {}]) == [True, False, False]


def test_sdk__strategy_variants__weights_as_unleash_fixes_them(evaluate, admin, flag):
    # Sent unsorted, with `variable` weights of 0: Unleash stores a 200, B 400, c 400 (sorted
    # as localeCompare sorts), and every SDK then splits users 20/40/40. Stored as sent, the
    # list [c 0, a 200, B 0] served `a` to everyone.
    variants = [
        {"name": name, "weight": weight, "weightType": kind, "stickiness": "userId"}
        for name, weight, kind in [("c", 0, "variable"), ("a", 200, "fix"), ("B", 0, "variable")]
    ]
    everyone = {"name": "flexibleRollout", "parameters": {"rollout": "100"}, "variants": variants}
    call(admin, "post", strategies_url(), {**everyone, "parameters": {"stickiness": "userId"}})
    turn(admin, "on")

    names = evaluate(USERS, variants=True)

    shares = {name: names.count(name) for name in ("a", "B", "c")}
    assert sum(shares.values()) == len(USERS)
    assert 35 < shares["a"] < 90, shares
    assert 85 < shares["B"] < 155, shares
    assert 85 < shares["c"] < 155, shares
