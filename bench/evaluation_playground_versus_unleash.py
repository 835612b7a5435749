"""The playground side by side with Unleash 8.2's: the same flags made through both admin APIs
(the set-ups of bench/differential_setups.py, by bench/differential.py's machinery), then
`POST /api/admin/playground` on both for the same contexts, compared field by field; and a few
advanced requests (`/api/admin/playground/advanced`: several environments, values split at
commas, a field left out with a warning).

    .venv/bin/python bench/evaluation_playground_versus_unleash.py [--contexts 40] [--keep]

flagadmin is served by gunicorn on a fresh SQLite database; Unleash is the reference at
UNLEASH_URL (started by ../shared/unleash-reference/start.sh when nothing answers). The run's
flags are named with its own prefix and archived and deleted on Unleash at the end.

What is compared, per flag and context (each server's answer for that flag; the same normalising
as bench/differential.py's client payload comparison): `isEnabled`,
`isEnabledInCurrentEnvironment`, `hasUnsatisfiedDependency`, `variant`, `variants`,
`strategies.result`, and per strategy its name, title, `disabled`, parameters, `result`
(`enabled`, `evaluationStatus`, `variant`, `variants`), constraints with their `result`,
segments (by name) with theirs. Left out: ids and links (each server's own ids). Contexts whose
answer is a random draw for a set-up are not compared (as bench/differential.py). Differences
that docs/evaluation.md documents are counted apart; any other fails the run (exit 1).
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.differential import (
    UNLEASH_ADMIN_TOKEN,
    CannotRun,
    Server,
    clean_up,
    first_difference,
    flagadmin,
    probe,
    reference,
    run_calls,
)
from bench.differential_contexts import contexts, is_sticky
from bench.differential_setups import all_setups

REPO_ROOT = Path(__file__).resolve().parent.parent
PLAYGROUND = "/api/admin/playground"


def constraint_normalised(constraint: dict[str, Any]) -> dict[str, Any]:
    found = {"caseInsensitive": False, "inverted": False, "values": [], **constraint}
    if found.get("value") is None:
        found.pop("value", None)
    return found


def variant_normalised(variant: dict[str, Any]) -> dict[str, Any]:
    found = {key: value for key, value in variant.items() if value is not None}
    if not found.get("overrides"):
        found.pop("overrides", None)
    return found


def strategy_normalised(strategy: dict[str, Any]) -> dict[str, Any]:
    result = dict(strategy["result"])
    if "variants" in result:
        result["variants"] = [variant_normalised(v) for v in result["variants"]]
    return {
        "name": strategy["name"],
        "title": strategy.get("title") or None,
        "disabled": bool(strategy.get("disabled")),
        "parameters": strategy.get("parameters") or {},
        "result": result,
        "constraints": [constraint_normalised(c) for c in strategy.get("constraints", [])],
        "segments": [
            {
                "name": segment["name"],
                "result": segment["result"],
                "constraints": [constraint_normalised(c) for c in segment["constraints"]],
            }
            for segment in strategy.get("segments", [])
        ],
    }


def feature_normalised(feature: dict[str, Any]) -> dict[str, Any]:
    return {
        "isEnabled": feature["isEnabled"],
        "isEnabledInCurrentEnvironment": feature["isEnabledInCurrentEnvironment"],
        "hasUnsatisfiedDependency": feature.get("hasUnsatisfiedDependency", False),
        "variant": feature["variant"],
        "variants": [variant_normalised(v) for v in feature.get("variants", [])],
        "strategies": {
            "result": feature["strategies"]["result"],
            "data": [strategy_normalised(s) for s in feature["strategies"]["data"]],
        },
    }


# Where Unleash's playground evaluator and Yggdrasil (the engine of the Python SDK, Edge and
# flagadmin) decide differently, as docs/evaluation.md documents: (why, does a strategy have it).
def _constraints(strategy: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        *strategy.get("constraints", []),
        *(c for segment in strategy.get("segments", []) for c in segment["constraints"]),
    ]


ENGINE_DIFFERENCES = (
    (
        "applicationHostname: Unleash's playground calls it unknown; the engine decides it",
        lambda strategy: strategy["name"] == "applicationHostname",
    ),
    (
        "caseInsensitive on IN/NOT_IN: Unleash's playground honours it, SDKs and the engine not",
        lambda strategy: any(
            c.get("caseInsensitive") and c["operator"] in ("IN", "NOT_IN")
            for c in _constraints(strategy)
        ),
    ),
    (
        "a DATE_ value without a time: JavaScript reads it, the engine does not (never matches)",
        lambda strategy: any(
            c["operator"].startswith("DATE_") and "T" not in str(c.get("value", ""))
            for c in _constraints(strategy)
        ),
    ),
    (
        "strategy variants: the engine hashes with the strategy's stickiness, Unleash with the "
        "variants' own",
        lambda strategy: any(
            v.get("stickiness", "default")
            != (strategy.get("parameters") or {}).get("stickiness", "default")
            for v in (strategy["result"].get("variants") or [])
        ),
    ),
    (
        "strategy variants without a groupId: the engine hashes with the flag's name, Unleash "
        "with 'undefined'",
        lambda strategy: (
            bool(strategy["result"].get("variants"))
            and "groupId" not in (strategy.get("parameters") or {})
        ),
    ),
)


def documented(difference: str, unleash: dict[str, Any]) -> str | None:
    """Why a difference is expected (a documented engine difference in the strategy it is
    about, or in any strategy for the flag's own fields), or None."""
    strategies = unleash["strategies"]["data"]
    if difference.startswith(".strategies.data["):
        index = int(difference[len(".strategies.data[") :].split("]", 1)[0])
        strategies = strategies[index : index + 1]
    for why, applies in ENGINE_DIFFERENCES:
        if any(applies(strategy) for strategy in strategies):
            return why
    return None


def playground_answers(
    server: Server, environment: str, context: dict[str, Any], prefix: str
) -> dict[str, dict[str, Any]]:
    body = {"environment": environment, "projects": ["default"], "context": context}
    status, answer = server.call("POST", PLAYGROUND, body)
    if status != 200:
        raise CannotRun(f"{server.name}: POST {PLAYGROUND} answered {status}: {answer}")
    if answer["input"] != body:
        raise CannotRun(f"{server.name}: input echoed as {answer['input']}, sent {body}")
    return {
        feature["name"]: feature
        for feature in answer["features"]
        if feature["name"].startswith(f"{prefix}-")
    }


# Unleash's limit for one advanced request: environments x flags x combinations.
ADVANCED_LIMIT = 15_000
# Advanced contexts, richest first: the first whose combinations fit the limit is asked (the
# reference's default project holds other runs' flags too, all of which each request counts).
SPLIT_CONTEXTS = [
    {
        "appName": "web,checkout",
        "userId": "user-7,alice",
        "properties": {"country": "NO,se", "age": "18,30"},
    },
    {"appName": "web", "userId": "user-7,alice", "properties": {"country": "NO,se"}},
    {"appName": "web", "userId": "user-7,alice,user-12", "properties": {"age": "30"}},
    {"appName": "web", "userId": "user-7", "properties": {"country": "se,no"}},
]


def combinations_of(context: dict[str, Any]) -> int:
    count = 1
    for key, value in context.items():
        if key == "properties":
            for inner in value.values():
                count *= len(inner.split(","))
        else:
            count *= len(value.split(","))
    return count


def advanced_requests(flags: int) -> list[dict[str, Any]]:
    """Requests within the limit for `flags` flags: values split at commas in two
    environments (or one), and a context with fields that are not strings."""
    requests = []
    for environments in (["development", "production"], ["development"]):
        budget = ADVANCED_LIMIT // (len(environments) * max(flags, 1))
        fitting = [c for c in SPLIT_CONTEXTS if 1 < combinations_of(c) <= budget]
        if fitting:
            requests.append(
                {"environments": environments, "projects": ["default"], "context": fitting[0]}
            )
            break
    if flags <= ADVANCED_LIMIT:
        requests.append(
            {
                "environments": ["development"],
                "context": {"appName": "web", "userId": "user-1", "tenant": 5, "flag": True},
            }
        )
    return requests


def flat_sticky(context: dict[str, Any], fields: tuple[str, ...]) -> bool:
    """`is_sticky` for a combination of the advanced form, whose properties are top-level."""
    return is_sticky({**context, "properties": context}, fields)


def compare_advanced(
    servers: list[Server], prefix: str, by_flag: dict, findings: Counter, shown: list
) -> int:
    compared = 0
    status, answer = servers[0].call(
        "POST", PLAYGROUND, {"environment": "development", "context": {"appName": "count"}}
    )
    if status != 200:
        raise CannotRun(f"unleash: POST {PLAYGROUND} answered {status}: {answer}")
    for body in advanced_requests(len(answer["features"])):
        answers = {}
        for server in servers:
            status, answer = server.call("POST", f"{PLAYGROUND}/advanced", body)
            if status != 200:
                raise CannotRun(f"{server.name}: advanced playground answered {status}: {answer}")
            answers[server.name] = answer
        unleash, ours = answers["unleash"], answers["flagadmin"]
        if unleash["input"] != ours["input"]:
            findings["advanced input"] += 1
            shown.append(f"advanced input: {unleash['input']} != {ours['input']}")
        if unleash.get("warnings") != ours.get("warnings"):
            findings["advanced warnings"] += 1
            shown.append(f"advanced warnings: {unleash.get('warnings')} != {ours.get('warnings')}")
        ours_by_name = {f["name"]: f for f in ours["features"] if f["name"].startswith(prefix)}
        for feature in unleash["features"]:
            if not feature["name"].startswith(f"{prefix}-"):
                continue
            mine = ours_by_name.get(feature["name"])
            for environment, items in feature["environments"].items():
                theirs = (mine or {}).get("environments", {}).get(environment, [])
                for index, item in enumerate(items):
                    setup = by_flag.get(feature["name"])
                    if setup is None or not flat_sticky(item["context"], setup.sticky_on):
                        continue
                    compared += 1
                    other = theirs[index] if index < len(theirs) else None
                    if other is None or other["context"] != item["context"]:
                        findings["advanced: combination missing or in another order"] += 1
                        continue
                    difference = first_difference(
                        feature_normalised(item), feature_normalised(other)
                    )
                    if difference and not documented(difference, item):
                        findings["advanced"] += 1
                        if len(shown) < 40:
                            shown.append(f"advanced {feature['name']} {environment}: {difference}")
    return compared


def run(arguments: argparse.Namespace) -> int:
    unleash_base = reference(arguments.unleash_url)
    prefix = f"pg{datetime.now(UTC):%m%d%H%M%S}{secrets.token_hex(2)}"
    unleash = Server("unleash", unleash_base, arguments.unleash_token)
    findings: Counter = Counter()
    expected: Counter = Counter()
    shown: list[str] = []
    compared = 0
    created: list[str] = []
    with flagadmin(REPO_ROOT) as (base, token):
        servers = [unleash, Server("flagadmin", base, token)]
        try:
            available = {name for name, status in probe(servers[1], prefix).items() if status < 300}
            setups = [s for s in all_setups() if not s.requires or s.requires in available]
            by_flag = {}
            for setup in setups:
                flag = f"{prefix}-{setup.slug}"
                run_calls(setup, flag, prefix, servers)
                created.append(flag)
                by_flag[flag] = setup
            for context in contexts(arguments.contexts):
                context = {"appName": "playground", **context}
                for environment in ("development", "production"):
                    answers = {
                        s.name: playground_answers(s, environment, context, prefix) for s in servers
                    }
                    for flag, feature in answers["unleash"].items():
                        setup = by_flag.get(flag)
                        if setup is None or not is_sticky(context, setup.sticky_on):
                            continue
                        compared += 1
                        ours = answers["flagadmin"].get(flag)
                        if ours is None:
                            findings[f"missing on flagadmin: {setup.slug}"] += 1
                            continue
                        difference = first_difference(
                            feature_normalised(feature), feature_normalised(ours)
                        )
                        if difference is None:
                            continue
                        why = documented(difference, feature)
                        if why:
                            expected[why] += 1
                            continue
                        findings[setup.slug] += 1
                        if len(shown) < 40:
                            shown.append(f"{setup.slug} ({environment}): {difference}")
            compared_advanced = compare_advanced(servers, prefix, by_flag, findings, shown)
        finally:
            if not arguments.keep:
                for failure in clean_up(unleash, prefix, created):
                    print(f"clean-up of {prefix}-* on Unleash: {failure}", file=sys.stderr)
    for line in shown:
        print(f"  differs: {line}")
    for why, count in sorted(expected.items()):
        print(f"  documented ({count}): {why}")
    by_setup = defaultdict(int)
    for slug, count in findings.items():
        by_setup[slug] += count
    print(
        f"playground versus Unleash 8.2: {len(created)} set-ups, {compared} flag answers and "
        f"{compared_advanced} advanced answers compared field by field; "
        f"{sum(findings.values())} differ ({len(by_setup)} set-ups), "
        f"{sum(expected.values())} documented differences"
    )
    return 1 if findings else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contexts", type=int, default=40)
    parser.add_argument(
        "--unleash-url", default=os.environ.get("UNLEASH_URL", "http://127.0.0.1:4242")
    )
    parser.add_argument(
        "--unleash-token", default=os.environ.get("UNLEASH_ADMIN_TOKEN", UNLEASH_ADMIN_TOKEN)
    )
    parser.add_argument("--keep", action="store_true", help="Leave the run's flags on Unleash.")
    arguments = parser.parse_args()
    try:
        return run(arguments)
    except CannotRun as error:
        print(f"playground comparison: cannot run: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
