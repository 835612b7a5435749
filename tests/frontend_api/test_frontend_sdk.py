"""The official browser SDK, `unleash-proxy-client` (what React, Vue, Next.js and the mobile
wrappers use), unchanged, against the served app's /api/frontend: run in Node 20 with its global
fetch (tests/sdk/node/frontend.js, installed by `npm ci` in tests/sdk/node from its
package-lock.json). It fetches the flags for a context, answers `isEnabled` and `getVariant`,
fetches again when `updateContext` changes the context, and sends its metrics, which reach the
same usage figures as server SDKs' metrics."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from evaluation.engine import clear_engines
from features.models import FeatureUsageBucket
from flagadmin.core.models import TokenType
from frontend_api.authentication import forget_tokens
from tests.factories import make_token

pytestmark = [
    pytest.mark.usefixtures("seeded_rows_back_after_module"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

NODE_DIR = Path(__file__).resolve().parents[1] / "sdk" / "node"
FEATURES = "/api/admin/projects/default/features"
ROLLOUT_100 = {"rollout": "100", "stickiness": "default", "groupId": "g"}
BLUE = {
    "name": "blue",
    "weight": 1000,
    "weightType": "variable",
    "stickiness": "default",
    "payload": {"type": "json", "value": '{"color":"blue"}'},
}
FLAGS = ["fe-everyone", "fe-alice", "fe-norway", "fe-off", "fe-unknown"]
ALICE = {"userId": "alice"}
BOB = {"userId": "bob"}
BOB_IN_NORWAY = {"userId": "bob", "properties": {"country": "no"}}


@pytest.fixture(autouse=True)
def fresh_frontend_memory():
    forget_tokens()
    clear_engines()
    yield
    forget_tokens()
    clear_engines()


@pytest.fixture(scope="session")
def browser_sdk() -> Path:
    """The browser SDK, installed from tests/sdk/node/package-lock.json when it is not yet."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js and npm are not installed (.ci/run installs Debian's nodejs and npm)")
    installed = NODE_DIR / "node_modules" / "unleash-proxy-client" / "package.json"
    if not installed.exists():
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, capture_output=True
        )
    return NODE_DIR / "frontend.js"


def run_browser_sdk(script: Path, url: str, token: str, contexts: list[dict], post: bool) -> dict:
    arguments = {
        "url": url,
        "token": token,
        "flags": FLAGS,
        "contexts": contexts,
        "usePOSTrequests": post,
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


def _post(client: APIClient, url: str, body: dict) -> None:
    response = client.post(url, json.dumps(body), content_type="application/json")
    assert response.status_code in (200, 201), response.content


@pytest.fixture
def flags() -> None:
    admin = APIClient()
    admin.credentials(HTTP_AUTHORIZATION=make_token(TokenType.ADMIN)[1])
    strategies = {
        "fe-everyone": {"name": "flexibleRollout", "parameters": ROLLOUT_100},
        "fe-alice": {
            "name": "flexibleRollout",
            "parameters": ROLLOUT_100,
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["alice"]}],
            "variants": [BLUE],
        },
        "fe-norway": {
            "name": "flexibleRollout",
            "parameters": ROLLOUT_100,
            "constraints": [{"contextName": "country", "operator": "IN", "values": ["no"]}],
        },
        "fe-off": {"name": "flexibleRollout", "parameters": ROLLOUT_100},
    }
    for name, strategy in strategies.items():
        _post(admin, FEATURES, {"name": name, "impressionData": name == "fe-alice"})
        base = f"{FEATURES}/{name}/environments/development"
        _post(admin, f"{base}/strategies", strategy)
        if name != "fe-off":
            _post(admin, f"{base}/on", {})


DISABLED = {"name": "disabled", "enabled": False}
OFF = {"enabled": False, "variant": {**DISABLED, "feature_enabled": False}}
ON = {"enabled": True, "variant": {**DISABLED, "feature_enabled": True, "featureEnabled": True}}
ALICE_BLUE = {
    "enabled": True,
    "variant": {
        "name": "blue",
        "enabled": True,
        "payload": {"type": "json", "value": '{"color":"blue"}'},
        "feature_enabled": True,
        "featureEnabled": True,
    },
}


@pytest.mark.parametrize("post", [False, True], ids=["get", "post"])
def test_browser_sdk__flags_variants_context_updates_metrics(flags, live_server, browser_sdk, post):
    token = make_token(TokenType.FRONTEND, projects=["default"], environment="development")[1]

    result = run_browser_sdk(
        browser_sdk, f"{live_server.url}/api/frontend", token, [ALICE, BOB, BOB_IN_NORWAY], post
    )

    assert result["errors"] == []
    everyone_off = {"fe-off": OFF, "fe-unknown": OFF}
    assert result["seen"] == [
        {
            "answers": {
                "fe-everyone": ON,
                "fe-alice": ALICE_BLUE,
                "fe-norway": OFF,
                **everyone_off,
            },
            "toggles": ["fe-alice", "fe-everyone"],
        },
        {
            "answers": {"fe-everyone": ON, "fe-alice": OFF, "fe-norway": OFF, **everyone_off},
            "toggles": ["fe-everyone"],
        },
        {
            "answers": {"fe-everyone": ON, "fe-alice": OFF, "fe-norway": ON, **everyone_off},
            "toggles": ["fe-everyone", "fe-norway"],
        },
    ]
    assert result["etag"].startswith('W/"')
    # Each flag asked twice per context (getVariant, then isEnabled), three contexts.
    counts = {
        bucket.feature_name: (bucket.yes, bucket.no)
        for bucket in FeatureUsageBucket.objects.filter(environment="development")
    }
    assert counts == {
        "fe-everyone": (6, 0),
        "fe-alice": (2, 4),
        "fe-norway": (2, 4),
        "fe-off": (0, 6),
    }
    assert set(FeatureUsageBucket.objects.values_list("app_name", flat=True)) == {
        "flagadmin-frontend-test"
    }


def test_browser_sdk__client_token__sdk_reports_the_refusal(flags, live_server, browser_sdk):
    token = make_token(TokenType.CLIENT, projects=["default"], environment="development")[1]

    result = run_browser_sdk(browser_sdk, f"{live_server.url}/api/frontend", token, [ALICE], False)

    assert result["errors"] == [{"type": "HttpError", "code": 403}]
    assert result["seen"][0]["toggles"] == []
