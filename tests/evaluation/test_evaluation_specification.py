"""Unleash's client specification (`@unleash/client-specification`, installed by `npm ci` in
tests/sdk/node from its package-lock.json): every case of every file through
`evaluation.engine.PayloadEngine`, the path flagadmin's decisions take. The same cases go
through the playground in tests/evaluation/test_playground_specification.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evaluation.engine import PayloadEngine

NODE_DIR = Path(__file__).resolve().parents[1] / "sdk" / "node"
SPECIFICATIONS = NODE_DIR / "node_modules" / "@unleash" / "client-specification" / "specifications"
# The package's index.json, in its order (a new version of the package changes it: see the
# first test).
SPECIFICATION_FILES = (
    "01-simple-examples.json",
    "02-user-with-id-strategy.json",
    "03-gradual-rollout-user-id-strategy.json",
    "04-gradual-rollout-session-id-strategy.json",
    "05-gradual-rollout-random-strategy.json",
    "06-remote-address-strategy.json",
    "07-multiple-strategies.json",
    "08-variants.json",
    "09-strategy-constraints.json",
    "10-flexible-rollout-strategy.json",
    "11-strategy-constraints-edge-cases.json",
    "12-custom-stickiness.json",
    "13-constraint-operators.json",
    "14-constraint-semver-operators.json",
    "15-global-constraints.json",
    "16-strategy-variants.json",
    "17-dependent-features.json",
    "18-utf8-flag-names.json",
    "19-delta-api-hydration.json",
    "20-delta-api-events.json",
    "21-regex-constraint-operators.json",
    "22-cidr-constraint-operators.json",
)


@pytest.fixture(scope="session")
def specifications() -> Path:
    return installed_specifications()


def installed_specifications() -> Path:
    """The specification's folder, installed from tests/sdk/node/package-lock.json when it is
    not yet (as tests/client_api/test_sdk.py installs the Node SDK); skips without npm."""
    if not (SPECIFICATIONS / "index.json").exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed (.ci/run installs Debian's npm)")
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, capture_output=True
        )
    return SPECIFICATIONS


def specification(folder: Path, file_name: str) -> dict[str, Any]:
    return json.loads((folder / file_name).read_text())


def client_payload(state: dict[str, Any]) -> dict[str, Any]:
    """A specification's state as a client payload (`features`, `segments`): delta-API events
    (`hydration`, `feature-updated`, `feature-removed`, `segment-updated`, `segment-removed`)
    applied in order, as an SDK of the delta API would."""
    if "events" not in state:
        return state
    features: dict[str, dict] = {}
    segments: dict[int, dict] = {}
    for event in state["events"]:
        kind = event["type"]
        if kind == "hydration":
            features = {feature["name"]: feature for feature in event["features"]}
            segments = {segment["id"]: segment for segment in event.get("segments", [])}
        elif kind == "feature-updated":
            features[event["feature"]["name"]] = event["feature"]
        elif kind == "feature-removed":
            features.pop(event["featureName"], None)
        elif kind == "segment-updated":
            segments[event["segment"]["id"]] = event["segment"]
        elif kind == "segment-removed":
            segments.pop(event["segmentId"], None)
    return {"version": 2, "features": list(features.values()), "segments": list(segments.values())}


def expected_variant(expected: dict[str, Any]) -> dict[str, Any]:
    """A variant test's expected answer in one shape: name, enabled, payload (None when the
    case has none), feature_enabled."""
    return {
        "name": expected["name"],
        "enabled": expected["enabled"],
        "payload": expected.get("payload"),
        "feature_enabled": expected.get("feature_enabled", expected.get("featureEnabled")),
    }


def test_specification__every_file_is_run(specifications):
    assert tuple(json.loads((specifications / "index.json").read_text())) == SPECIFICATION_FILES


@pytest.mark.parametrize("file_name", SPECIFICATION_FILES)
def test_specification__every_case_through_the_engine(specifications, file_name):
    case = specification(specifications, file_name)
    engine = PayloadEngine(json.dumps(client_payload(case["state"])).encode())
    wrong = []

    for test in case.get("tests", []):
        decision = engine.decide(test["toggleName"], test["context"])
        enabled = decision.enabled if decision is not None else False
        if enabled != test["expectedResult"]:
            wrong.append((test["description"], enabled))
    for test in case.get("variantTests", []):
        decision = engine.decide(test["toggleName"], test["context"])
        found = (
            {
                "name": decision.variant.name,
                "enabled": decision.variant.enabled,
                "payload": decision.variant.payload,
                "feature_enabled": decision.variant.feature_enabled,
            }
            if decision is not None
            else {"name": "disabled", "enabled": False, "payload": None, "feature_enabled": False}
        )
        if found != expected_variant(test["expectedResult"]):
            wrong.append((test["description"], found))

    assert wrong == []
    assert case.get("tests") or case.get("variantTests")
