"""Yggdrasil (`yggdrasil-engine`), measured as the server's evaluation engine: fidelity to
Unleash's client specification, speed per evaluation, memory per engine, and what taking a
client payload as its state costs. Figures and what they decided: docs/evaluation.md.

    npm ci --prefix tests/sdk/node        # @unleash/client-specification, once
    .venv/bin/python bench/evaluation_engine.py [--flags 2000] [--enabled 100] [--contexts 1000]

No server, no database: the payload is built in the client API's shape (`GET
/api/client/features`: every flag with its state, strategies with segment constraints inlined,
variants, dependencies), `--flags` flags of which `--enabled` are on with mixed strategies
(flexibleRollout with constraints, default for listed users, remoteAddress, strategy and
environment variants, dependencies). Each figure is the best of `--repeat` runs.

- fidelity: every case of every specification file, through the package's Python wrapper
  (`UnleashEngine.is_enabled` / `get_variant`, what the Python SDK calls) and through
  `evaluation.engine.PayloadEngine` (what flagadmin calls);
- speed: microseconds per evaluation through the wrapper and through `PayloadEngine`, and
  `decide_all` per call (every flag, the enabled ones asked);
- memory: resident memory per engine holding the payload (`--engines` of them built, RSS
  before and after), and the Python side of a `PayloadEngine`;
- state: the payload's size and the time to take it (the library's `take_state`), and to
  build a `PayloadEngine` from it;
- playground: building the reasons engines of the payload (`evaluation.reasons.Reasons`, once
  per environment state) and one answer for every flag (decisions, reasons, the answer's
  shape), per context, then its JSON's size.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SPECIFICATIONS = ROOT / "tests/sdk/node/node_modules/@unleash/client-specification/specifications"


def django_setup() -> None:
    # evaluation.engine imports the client API's modules (models, no queries).
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flagadmin.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.setdefault("ENV_FILE", "")
    import django

    django.setup()


# --- the payload ---------------------------------------------------------------------------------


def constraint(context: str, operator: str, values: list[str], **more: Any) -> dict:
    return {
        "contextName": context,
        "operator": operator,
        "values": values,
        "caseInsensitive": False,
        "inverted": False,
        **more,
    }


def strategy_variants(name: str, count: int) -> list[dict]:
    return [
        {
            "name": f"{name}-v{n}",
            "weight": 1000 // count,
            "weightType": "variable",
            "stickiness": "default",
            "payload": {"type": "string", "value": f"payload {n}"},
        }
        for n in range(count)
    ]


def flag(number: int, enabled: bool) -> dict:
    name = f"bench-{number:05d}"
    kind = number % 5
    rollout = {"rollout": str(10 + number % 90), "stickiness": "default", "groupId": name}
    strategies: list[dict] = []
    if kind == 0:
        strategies.append(
            {
                "name": "flexibleRollout",
                "constraints": [constraint("country", "IN", ["no", "se", "dk"])],
                "parameters": rollout,
                "variants": strategy_variants(name, 3),
            }
        )
    elif kind == 1:
        strategies.append(
            {
                "name": "default",
                "constraints": [
                    constraint("userId", "IN", [f"user-{n}" for n in range(0, 400, 7)]),
                    constraint("appName", "NOT_IN", ["legacy"]),
                ],
                "parameters": {},
                "variants": [],
            }
        )
    elif kind == 2:
        strategies.append(
            {
                "name": "remoteAddress",
                "constraints": [],
                "parameters": {"IPs": "10.0.0.1, 192.168.0.0/16"},
                "variants": [],
            }
        )
        strategies.append(
            {"name": "flexibleRollout", "constraints": [], "parameters": rollout, "variants": []}
        )
    elif kind == 3:
        strategies.append(
            {
                "name": "flexibleRollout",
                "constraints": [
                    constraint("version", "SEMVER_GTE", [], value="2.0.0"),
                    constraint("currentTime", "DATE_AFTER", [], value="2024-01-01T00:00:00Z"),
                    # a segment's constraint, inlined as the client API inlines them
                    {"contextName": "plan", "operator": "IN", "values": ["pro", "team"]},
                ],
                "parameters": rollout,
                "variants": [],
            }
        )
    else:
        strategies.append(
            {"name": "flexibleRollout", "constraints": [], "parameters": rollout, "variants": []}
        )
    feature = {
        "name": name,
        "type": "release",
        "enabled": enabled,
        "project": "default",
        "stale": False,
        "strategies": strategies,
        "variants": (
            [
                {"name": v, "weight": 500, "weightType": "variable", "stickiness": "default"}
                for v in ("blue", "green")
            ]
            if kind == 4
            else []
        ),
        "description": None,
        "impressionData": number % 7 == 0,
    }
    if kind == 4 and number >= 5:
        feature["dependencies"] = [{"feature": f"bench-{number - 5:05d}", "enabled": True}]
    return feature


def payload(flags: int, enabled: int) -> bytes:
    """`flags` flags, `enabled` of them on (spread evenly), as GET /api/client/features."""
    step = max(flags // max(enabled, 1), 1)
    on = set(range(0, flags, step)[:enabled])
    features = [flag(number, number in on) for number in range(flags)]
    body = {
        "version": 2,
        "features": features,
        "query": {"environment": "development", "inlineSegmentConstraints": True},
        "meta": {"revisionId": 1, "etag": '"bench"', "queryHash": "bench"},
    }
    return json.dumps(body, separators=(",", ":")).encode()


def contexts(count: int, seed: int = 26) -> list[dict]:
    draw = random.Random(seed)
    found = []
    for _ in range(count):
        context: dict[str, Any] = {
            "appName": draw.choice(["web", "legacy", "ios"]),
            "environment": "development",
            "userId": f"user-{draw.randrange(1000)}",
            "remoteAddress": draw.choice(["10.0.0.1", "192.168.3.4", "172.16.0.1"]),
            "properties": {
                "country": draw.choice(["no", "se", "us"]),
                "version": draw.choice(["1.9.0", "2.0.0", "2.1.0-beta.1"]),
                "plan": draw.choice(["free", "pro"]),
            },
        }
        if draw.random() < 0.5:
            context["sessionId"] = f"s-{draw.randrange(100)}"
        found.append(context)
    return found


# --- measurements ---------------------------------------------------------------------------------


def best(repeat: int, run: Callable[[], Any]) -> float:
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        timings.append(time.perf_counter() - started)
    return min(timings)


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def folded(state: dict) -> dict:
    """A specification's state as a client payload: delta events (`hydration`,
    `feature-updated`, `feature-removed`, `segment-updated`) applied in order."""
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


def fidelity() -> tuple[int, int, int, list[str]]:
    """(cases, wrapper failures, PayloadEngine failures, what failed)."""
    from yggdrasil_engine.engine import UnleashEngine

    from evaluation.engine import PayloadEngine

    cases = wrapper_failures = ours_failures = 0
    failed = []
    for file_name in json.loads((SPECIFICATIONS / "index.json").read_text()):
        specification = json.loads((SPECIFICATIONS / file_name).read_text())
        wrapper = UnleashEngine()
        wrapper.take_state(json.dumps(specification["state"]))
        ours = PayloadEngine(json.dumps(folded(specification["state"])).encode())
        for test in specification.get("tests", []):
            cases += 1
            expected = test["expectedResult"]
            if wrapper.is_enabled(test["toggleName"], test["context"]).is_enabled != expected:
                wrapper_failures += 1
                failed.append(f"wrapper {file_name}: {test['description']}")
            decision = ours.decide(test["toggleName"], test["context"])
            if (decision.enabled if decision else False) != expected:
                ours_failures += 1
                failed.append(f"PayloadEngine {file_name}: {test['description']}")
        for test in specification.get("variantTests", []):
            cases += 1
            expected = test["expectedResult"]
            wanted = (
                expected["name"],
                expected["enabled"],
                expected.get("payload"),
                expected.get("feature_enabled", expected.get("featureEnabled")),
            )
            variant = wrapper.get_variant(test["toggleName"], test["context"]).variant
            if (variant.name, variant.enabled, variant.payload, variant.feature_enabled) != wanted:
                wrapper_failures += 1
                failed.append(f"wrapper {file_name}: {test['description']}")
            decision = ours.decide(test["toggleName"], test["context"])
            got = (
                (
                    decision.variant.name,
                    decision.variant.enabled,
                    decision.variant.payload,
                    decision.variant.feature_enabled,
                )
                if decision
                else ("disabled", False, None, False)
            )
            if got != wanted:
                ours_failures += 1
                failed.append(f"PayloadEngine {file_name}: {test['description']}")
    return cases, wrapper_failures, ours_failures, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flags", type=int, default=2000)
    parser.add_argument("--enabled", type=int, default=100)
    parser.add_argument("--contexts", type=int, default=1000)
    parser.add_argument("--engines", type=int, default=10, help="engines built for memory")
    parser.add_argument("--repeat", type=int, default=3)
    arguments = parser.parse_args()
    django_setup()
    from yggdrasil_engine.engine import UnleashEngine

    from evaluation.engine import PayloadEngine

    print(f"yggdrasil-engine {version('yggdrasil-engine')}, Python {sys.version.split()[0]}")

    if (SPECIFICATIONS / "index.json").exists():
        cases, wrapper_failures, ours_failures, failed = fidelity()
        print(
            f"fidelity: {cases} client-specification cases "
            f"({version_of_specification()}): wrapper {cases - wrapper_failures} pass, "
            f"PayloadEngine {cases - ours_failures} pass"
        )
        for line in failed:
            print(f"  failed: {line}")
    else:
        print(f"fidelity: skipped, no {SPECIFICATIONS} (npm ci --prefix tests/sdk/node)")

    body = payload(arguments.flags, arguments.enabled)
    names = [feature["name"] for feature in json.loads(body)["features"]]
    enabled_names = [f["name"] for f in json.loads(body)["features"] if f["enabled"]]
    sample = contexts(arguments.contexts)
    print(
        f"payload: {arguments.flags} flags, {len(enabled_names)} enabled, "
        f"{len(body) / 1024:.0f} kB; {len(sample)} contexts"
    )

    def take() -> None:
        UnleashEngine().take_state(body.decode())

    def build() -> None:
        PayloadEngine(body)

    print(
        f"state: take_state (wrapper) {best(arguments.repeat, take) * 1000:.1f} ms, "
        f"PayloadEngine built {best(arguments.repeat, build) * 1000:.1f} ms"
    )

    wrapper = UnleashEngine()
    wrapper.take_state(body.decode())
    ours = PayloadEngine(body)
    asked = enabled_names or names
    evaluations = len(sample) * len(asked)

    def wrapper_enabled() -> None:
        for context in sample:
            for name in asked:
                wrapper.check_enabled(name, context)

    def wrapper_variant() -> None:
        for context in sample:
            for name in asked:
                wrapper.check_variant(name, context)

    def ours_decide() -> None:
        for context in sample:
            for name in asked:
                ours.decide(name, context)

    def ours_decide_all() -> None:
        for context in sample:
            ours.decide_all(context)

    def ours_decide_all_enabled() -> None:
        for context in sample:
            ours.decide_all(context, only_enabled=True)

    per = {
        "wrapper check_enabled": best(arguments.repeat, wrapper_enabled) / evaluations,
        "wrapper check_variant": best(arguments.repeat, wrapper_variant) / evaluations,
        "PayloadEngine.decide": best(arguments.repeat, ours_decide) / evaluations,
    }
    for label, seconds in per.items():
        print(f"speed: {label} {seconds * 1e6:.1f} us per evaluation")
    for label, run in (
        ("decide_all (every flag)", ours_decide_all),
        ("decide_all (only_enabled)", ours_decide_all_enabled),
    ):
        seconds = best(arguments.repeat, run) / len(sample)
        print(
            f"speed: {label} {seconds * 1000:.3f} ms per call "
            f"({seconds / len(asked) * 1e6:.1f} us per enabled flag)"
        )

    playground(body, sample[:50], arguments.repeat)

    gc.collect()
    before = rss_bytes()
    kept = []
    for _ in range(arguments.engines):
        engine = UnleashEngine()
        engine.take_state(body.decode())
        kept.append(engine)
    gc.collect()
    per_engine = (rss_bytes() - before) / arguments.engines
    del kept
    tracemalloc.start()
    ours_again = PayloadEngine(body)
    python_side, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del ours_again
    print(
        f"memory: {per_engine / 2**20:.2f} MB resident per engine holding the payload "
        f"({arguments.engines} built); PayloadEngine's Python side {python_side / 2**20:.2f} MB"
    )
    return 0


def playground(body: bytes, sample: list[dict], repeat: int) -> None:
    import orjson

    from evaluation.engine import PayloadEngine
    from evaluation.playground import EnvironmentView, _evaluate, _feature
    from evaluation.reasons import Reasons
    from evaluation.selectors import EnvironmentSnapshot, StrategyDetails

    features = json.loads(body)["features"]
    strategies = {
        feature["name"]: tuple(
            StrategyDetails(
                id=f"{feature['name']}-{index}",
                name=strategy["name"],
                title=None,
                disabled=False,
                parameters=strategy["parameters"],
                constraints=strategy["constraints"],
                variants=strategy["variants"],
                segments=(),
            )
            for index, strategy in enumerate(feature["strategies"])
        )
        for feature in features
    }
    snapshot = EnvironmentSnapshot("development", True, features, strategies, {}, {})
    built = best(repeat, lambda: Reasons(snapshot))
    view = EnvironmentView(snapshot, PayloadEngine(body), Reasons(snapshot))
    answers: list = []

    def answer_all() -> None:
        for context in sample:
            answers[:] = [_feature(view, *found) for found in _evaluate(view, None, context)]

    per_answer = best(repeat, answer_all) / len(sample)
    print(
        f"playground: reasons engines built in {built * 1000:.0f} ms; one answer for "
        f"{len(features)} flags {per_answer * 1000:.0f} ms, {len(orjson.dumps(answers)) // 1024} kB"
    )


def version_of_specification() -> str:
    package = SPECIFICATIONS.parent / "package.json"
    return f"@unleash/client-specification {json.loads(package.read_text())['version']}"


if __name__ == "__main__":
    sys.exit(main())
