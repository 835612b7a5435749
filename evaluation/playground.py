"""The playground: every flag of the asked projects, decided for a context in an environment, with
why (Unleash 8.2's `PlaygroundService` and view models, `features/playground/`).

- The decision (`isEnabled`) and the variant are the engine's, over the environment's client
  payload (`evaluation.engine`): the worker's engine when it holds the flags this request read,
  else one built from this request's own snapshot (a change landed in between).
- The reasons (each strategy's result, each constraint's and segment's, unsatisfied
  dependencies) come from the same engine's rules, asked one piece at a time
  (`evaluation.reasons`), and are built from the same snapshot.
- The advanced form: several environments, and context values split at commas into every
  combination (at most MAX_COMBINATIONS evaluations: environments x flags x combinations, as
  Unleash counts them), top-level context fields that are neither strings nor `properties`
  left out and named in `warnings`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from evaluation.engine import FlagDecision, PayloadEngine, encode_context, fresh_engine
from evaluation.reasons import FlagReasons, Reasons
from evaluation.selectors import EnvironmentSnapshot, environment_snapshot
from flagadmin.core.caches import BoundedCache
from flagadmin.core.errors import InvalidInputError, Problem

# Unleash's limit for one advanced evaluation (its `advancedPlayground` flag's default).
MAX_COMBINATIONS = 15_000
# Reasons engines kept per process, one per environment state lately asked about.
MAX_KEPT_REASONS = 8
# The environment the SDK in Unleash's playground has when the context names none.
DEFAULT_CONTEXT_ENVIRONMENT = "default"


@dataclass(frozen=True)
class EnvironmentView:
    snapshot: EnvironmentSnapshot
    engine: PayloadEngine
    reasons: Reasons


# Reasons engines by the environment state they explain (the least recently asked goes first).
_kept_reasons: BoundedCache[bytes, Reasons] = BoundedCache(
    "playground reasons", max_entries=MAX_KEPT_REASONS, evict="least_recent"
)


def clear_reasons() -> None:
    """Forget the reasons engines of this process."""
    _kept_reasons.clear()


def _reasons_for(snapshot: EnvironmentSnapshot) -> Reasons:
    key = orjson.dumps(
        [snapshot.environment, snapshot.digest, snapshot.strategies, snapshot.segments],
        option=orjson.OPT_NON_STR_KEYS,
    )
    found = _kept_reasons.get(key)
    if found is not None:
        return found
    built = Reasons(snapshot)
    _kept_reasons.put(key, built)
    return built


def environment_view(environment: str) -> EnvironmentView:
    """`environment` as committed now: its snapshot, an engine holding exactly its flags, and
    the reasons engines."""
    snapshot = environment_snapshot(environment)
    engine = fresh_engine(environment) if snapshot.exists else None
    if engine is None or engine.digest != snapshot.digest:
        # No such environment (nothing to keep an engine for), or the flags moved between the
        # engine's snapshot and this one: an engine of this request's own.
        engine = PayloadEngine(snapshot.body)
    return EnvironmentView(snapshot, engine, _reasons_for(snapshot))


def evaluation_context(context: Mapping[str, Any]) -> dict[str, Any]:
    """The context the engine is asked with: as given, in the environment `default` unless it
    names one (the static context of the SDK in Unleash's playground)."""
    found = dict(context)
    found.setdefault("environment", DEFAULT_CONTEXT_ENVIRONMENT)
    return found


def _flags(view: EnvironmentView, projects: Sequence[str] | None) -> list[str]:
    return [flag.name for flag in view.engine.flags_of(projects)]


def _evaluate(
    view: EnvironmentView, projects: Sequence[str] | None, context: Mapping[str, Any]
) -> list[tuple[FlagDecision, FlagReasons]]:
    encoded = encode_context(evaluation_context(context))
    constraint_results: dict[int, bool] = {}
    return [
        (decision, view.reasons.explain(decision.name, encoded, constraint_results))
        for decision in view.engine.decide_all(encoded, projects)
    ]


def _variant_shown(decision: FlagDecision, reasons: FlagReasons) -> dict[str, Any]:
    """The flag's variant as Unleash's playground shows it: the engine's, in the shape of where
    it came from (the matched strategy's variants, the flag's, or none)."""
    variant = decision.variant
    if not decision.enabled:
        return {"name": "disabled", "enabled": False, "feature_enabled": False}
    if not variant.enabled:
        return {
            "feature_enabled": True,
            "featureEnabled": True,
            "name": "disabled",
            "enabled": False,
        }
    payload = {"payload": variant.payload} if variant.payload is not None else {}
    if reasons.matched_variants is not None:
        return {"name": variant.name, "enabled": True, **payload, "feature_enabled": True}
    return {
        "name": variant.name,
        **payload,
        "enabled": True,
        "feature_enabled": True,
        "featureEnabled": True,
    }


def _with_links(
    data: list[dict[str, Any]], environment: str, project: str, name: str
) -> list[dict[str, Any]]:
    return [
        strategy
        | {
            "links": {
                "edit": f"/projects/{project}/features/{name}/strategies/edit"
                f"?environmentId={environment}&strategyId={strategy['id']}"
            }
        }
        for strategy in data
    ]


def _feature(view: EnvironmentView, decision: FlagDecision, reasons: FlagReasons) -> dict[str, Any]:
    """One flag's answer, `playgroundFeatureSchema`'s fields in Unleash's order."""
    snapshot = view.snapshot
    variants = reasons.matched_variants
    if variants is None:
        variants = snapshot.variants.get(decision.name) or []
    return {
        "isEnabled": decision.enabled,
        "isEnabledInCurrentEnvironment": view.engine.is_on(decision.name),
        "hasUnsatisfiedDependency": reasons.has_unsatisfied_dependency,
        "variant": _variant_shown(decision, reasons),
        "variants": variants,
        "name": decision.name,
        "projectId": decision.project,
        "strategies": {
            "result": reasons.result,
            "data": _with_links(
                reasons.data, snapshot.environment, decision.project, decision.name
            ),
        },
    }


def playground(
    *, environment: str, projects: Sequence[str] | None, context: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """`POST /api/admin/playground`'s `features`: every flag of `projects` (None: all) in
    `environment` for `context`, by name."""
    view = environment_view(environment)
    return [_feature(view, *found) for found in _evaluate(view, projects, context)]


# --- the advanced form -------------------------------------------------------------------------


def clean_context(context: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Unleash's `cleanContext`: top-level fields other than `properties` that are not strings
    are left out (and named), `appName` goes last."""
    cleaned: dict[str, Any] = {}
    removed: list[str] = []
    for key, value in context.items():
        if key == "appName":
            continue
        if key == "properties" or isinstance(value, str):
            cleaned[key] = value
        else:
            removed.append(key)
    cleaned["appName"] = context.get("appName")
    return cleaned, removed


def _split(context: Mapping[str, Any]) -> dict[str, list[Any]]:
    """Unleash's `splitByComma`: every string split at commas, `properties` flattened into the
    top level (a later field of the same name replaces an earlier one, in its place)."""
    split: dict[str, list[Any]] = {}
    for key, value in context.items():
        if key == "properties" and isinstance(value, Mapping):
            split.update(_split(value))
        elif isinstance(value, str):
            split[key] = value.split(",")
        else:
            split[key] = [value]
    return split


def combination_count(context: Mapping[str, Any]) -> int:
    return math.prod(len(values) for values in _split(context).values())


def combinations(context: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Unleash's `generateObjectCombinations`: one flat context per choice of one value of
    each field, the first field varying slowest."""
    found: list[dict[str, Any]] = [{}]
    for key, values in _split(context).items():
        found = [{**partial, key: value} for partial in found for value in values]
    return found


def check_complexity(environments: int, flags: int, contexts: int) -> None:
    """Unleash's `validateQueryComplexity`: at most MAX_COMBINATIONS evaluations."""
    total = environments * flags * contexts
    if total > MAX_COMBINATIONS:
        message = (
            f"Rejecting evaluation as it would generate {total} combinations exceeding "
            f"{MAX_COMBINATIONS} limit. Please reduce the number of selected environments "
            f"({environments}), features ({flags}), context field combinations ({contexts})."
        )
        raise InvalidInputError(Problem(message), message=message)


def advanced_playground(
    *, environments: Sequence[str], projects: Sequence[str] | None, context: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[str]]:
    """`POST /api/admin/playground/advanced`'s `features`, and the context fields left out."""
    cleaned, removed = clean_context(context)
    # One view a distinct environment, built once the request is known to be within the limit:
    # a list naming one environment a thousand times is one snapshot and one engine.
    distinct: dict[str, EnvironmentView] = {environments[0]: environment_view(environments[0])}
    flags = len(_flags(distinct[environments[0]], projects))
    contexts = combination_count(cleaned)
    check_complexity(len(environments), flags, contexts)
    by_name: dict[str, dict[str, Any]] = {}
    if flags:
        for name in environments:
            if name not in distinct:
                distinct[name] = environment_view(name)
            view = distinct[name]
            environment = view.snapshot.environment
            for single in combinations(cleaned):
                for decision, reasons in _evaluate(view, projects, single):
                    shown = _feature(view, decision, reasons)
                    item = {
                        "isEnabled": shown["isEnabled"],
                        "isEnabledInCurrentEnvironment": shown["isEnabledInCurrentEnvironment"],
                        "hasUnsatisfiedDependency": shown["hasUnsatisfiedDependency"],
                        "variant": shown["variant"],
                        "context": single,
                        "variants": shown["variants"],
                        "name": decision.name,
                        "environment": environment,
                        "projectId": decision.project,
                        "strategies": shown["strategies"],
                    }
                    entry = by_name.setdefault(
                        decision.name,
                        {"name": decision.name, "projectId": decision.project, "environments": {}},
                    )
                    entry["environments"].setdefault(environment, []).append(item)
    return list(by_name.values()), removed
