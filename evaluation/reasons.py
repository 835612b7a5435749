"""Why a flag is on or off, as the playground shows it, decided by the same engine as the
decision itself: each strategy, constraint, segment and dependency is asked of Yggdrasil as a
toggle of its own, so the reasons never follow other rules than the decision they explain.

From one `EnvironmentSnapshot`, a handful of engines hold those toggles:

- constraints: one toggle per distinct constraint (strategies' own and segments'), a `default`
  strategy with that constraint alone: on exactly when the constraint holds;
- strategies: per position k among a flag's evaluated strategies, an engine where the toggle
  named as the flag has that strategy alone, as the client payload has it (segment
  constraints inlined): on exactly when the strategy is. A toggle named as the flag, so that
  the rollouts that hash its name (no `groupId`, the gradual rollouts) hash the same;
- strategy variants: per position, the strategy's variants under a `default` strategy, so the
  variant it would give is known whether it matched or not (Unleash's playground shows it);
- dependencies: the parents as the payload has them, and for each child a toggle that is on
  exactly when its dependencies are satisfied.

Strategies the engine does not know (custom ones) cannot be decided: `incomplete`, `unknown`
unless a constraint or segment fails, as Unleash's playground says; paused ones are
`unevaluated`. Unlike Unleash 8.2's playground, `userWithId`, the gradual rollouts and
`applicationHostname` are decided, as SDKs decide them (Unleash's playground evaluator lacks
the first and calls the last unknown): the reason then agrees with the decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from evaluation.selectors import EnvironmentSnapshot, StrategyDetails
from evaluation.yggdrasil import Engine, answer_value

# The strategies Yggdrasil decides (its `built_in_strategies`).
ENGINE_STRATEGIES = frozenset(
    (
        "default",
        "userWithId",
        "gradualRolloutUserId",
        "gradualRolloutRandom",
        "applicationHostname",
        "gradualRolloutSessionId",
        "remoteAddress",
        "flexibleRollout",
    )
)
# Between the parts of a synthetic toggle's name: a control character, in no flag's name.
SEPARATOR = "\x1f"

Status = Literal["complete", "incomplete", "unevaluated"]


@dataclass(frozen=True, slots=True)
class _Planned:
    """One strategy of a flag and where its questions are asked."""

    details: StrategyDetails
    status: Status
    constraints: tuple[int, ...]  # indexes of the constraint toggles, in order
    segments: tuple[tuple[int, tuple[int, ...]], ...]  # (segment id, its constraint indexes)
    position: int | None  # in the strategy and variant engines, when evaluated
    has_variants: bool


@dataclass
class FlagReasons:
    """The strategies' part of a playground answer for one flag and context."""

    # `strategies.result`: True, False or "unknown".
    result: bool | str
    # `strategies.data`, in Unleash's shape (without `links`, which need the environment).
    data: list[dict[str, Any]] = field(default_factory=list)
    # The matched strategy's variants, when it gave one (then the flag's variant is its).
    matched_variants: list[dict[str, Any]] | None = None
    has_unsatisfied_dependency: bool = False


def _toggle(name: str, strategy: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"name": name, "enabled": True, "strategies": [strategy], **more}


def _engine(toggles: list[dict[str, Any]]) -> Engine | None:
    if not toggles:
        return None
    return Engine(orjson.dumps({"version": 2, "features": toggles}))


class Reasons:
    """The reasons engines of one environment snapshot; `explain` asks them for one flag."""

    def __init__(self, snapshot: EnvironmentSnapshot) -> None:
        self.snapshot = snapshot
        payload = {feature["name"]: feature for feature in snapshot.features}
        self._payload = payload
        constraint_index: dict[bytes, int] = {}
        constraint_toggles: list[dict[str, Any]] = []

        def constraint(found: dict[str, Any]) -> int:
            key = orjson.dumps(found, option=orjson.OPT_SORT_KEYS)
            index = constraint_index.get(key)
            if index is None:
                index = constraint_index[key] = len(constraint_toggles)
                constraint_toggles.append(
                    _toggle(f"c{SEPARATOR}{index}", {"name": "default", "constraints": [found]})
                )
            return index

        strategy_toggles: list[list[dict[str, Any]]] = []
        variant_toggles: list[list[dict[str, Any]]] = []
        self._plans: dict[str, tuple[_Planned, ...]] = {}
        for name, strategies in snapshot.strategies.items():
            feature = payload.get(name)
            if feature is None:
                continue  # not served (an archived project's flag)
            served = iter(feature["strategies"])  # the enabled ones, in the same order
            plans = []
            position = 0
            for details in strategies:
                as_served = None if details.disabled else next(served, None)
                status: Status = (
                    "unevaluated"
                    if details.disabled
                    else "complete"
                    if details.name in ENGINE_STRATEGIES and as_served is not None
                    else "incomplete"
                )
                planned_position = None
                if status == "complete":
                    planned_position = position
                    if position == len(strategy_toggles):
                        strategy_toggles.append([])
                        variant_toggles.append([])
                    strategy_toggles[position].append(_toggle(name, as_served))
                    if details.variants:
                        forced = {
                            "name": "default",
                            "parameters": as_served.get("parameters") or {},
                            "constraints": [],
                            "variants": as_served.get("variants") or [],
                        }
                        variant_toggles[position].append(_toggle(name, forced))
                    position += 1
                plans.append(
                    _Planned(
                        details=details,
                        status=status,
                        constraints=tuple(constraint(c) for c in details.constraints),
                        segments=tuple(
                            (
                                segment,
                                tuple(
                                    constraint(c) for c in snapshot.segments[segment].constraints
                                ),
                            )
                            for segment in details.segments
                        ),
                        position=planned_position,
                        has_variants=bool(details.variants),
                    )
                )
            self._plans[name] = tuple(plans)

        dependency_toggles = self._dependency_toggles(payload)
        self._constraints = _engine(constraint_toggles)
        self._strategies = [_engine(toggles) for toggles in strategy_toggles]
        self._variants = [_engine(toggles) for toggles in variant_toggles]
        self._dependencies = _engine(dependency_toggles)
        self._constraint_names = [toggle["name"].encode() for toggle in constraint_toggles]

    @staticmethod
    def _dependency_toggles(payload: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
        """The parents as served (with theirs, the engine's rule for grandparents needs them),
        and per child a toggle on exactly when its dependencies are satisfied."""
        children = [feature for feature in payload.values() if feature.get("dependencies")]
        needed: dict[str, dict[str, Any]] = {}
        waiting = [d["feature"] for child in children for d in child["dependencies"]]
        while waiting:
            parent = waiting.pop()
            if parent in needed or parent not in payload:
                continue
            needed[parent] = payload[parent]
            waiting.extend(d["feature"] for d in payload[parent].get("dependencies", []))
        return [
            *needed.values(),
            *(
                _toggle(
                    f"d{SEPARATOR}{child['name']}",
                    {"name": "default"},
                    dependencies=child["dependencies"],
                )
                for child in children
            ),
        ]

    def explain(
        self, name: str, context: bytes, constraint_results: dict[int, bool]
    ) -> FlagReasons:
        """`name`'s reasons for `context` (encoded as `evaluation.engine.encode_context`
        encodes it); `constraint_results` is shared by the calls for one context."""
        feature_strategies = self.snapshot.strategies.get(name, ())
        has_dependencies = self._has_dependencies(name)
        unsatisfied = has_dependencies and not self._ask(
            self._dependencies, f"d{SEPARATOR}{name}", context
        )
        if not feature_strategies:
            enabled = self._served_enabled(name)
            return FlagReasons(result=enabled, has_unsatisfied_dependency=unsatisfied)

        def holds(index: int) -> bool:
            found = constraint_results.get(index)
            if found is None:
                found = constraint_results[index] = bool(
                    self._constraints.enabled(self._constraint_names[index], context)
                )
            return found

        data = []
        matched: tuple[dict[str, Any], StrategyDetails] | None = None
        unknown = False
        for planned in self._plans.get(name, ()):
            details = planned.details
            constraints = [
                _constraint_shown(c, holds(i), defaults=True)
                for c, i in zip(details.constraints, planned.constraints, strict=True)
            ]
            segments = []
            for segment_id, indexes in planned.segments:
                segment = self.snapshot.segments[segment_id]
                shown = [
                    _constraint_shown(c, holds(i), defaults=False)
                    for c, i in zip(segment.constraints, indexes, strict=True)
                ]
                segments.append(
                    {
                        "name": segment.name,
                        "id": segment.id,
                        "result": all(c["result"] for c in shown),
                        "constraints": shown,
                    }
                )
            result = self._strategy_result(name, planned, context, constraints, segments)
            if result["enabled"] is True and matched is None:
                matched = (result, details)
            unknown = unknown or result["enabled"] == "unknown"
            shown_strategy: dict[str, Any] = {"name": details.name, "id": details.id}
            if details.title:
                shown_strategy["title"] = details.title
            shown_strategy |= {
                "disabled": details.disabled,
                "parameters": details.parameters,
                "result": result,
                "constraints": constraints,
                "segments": segments,
            }
            data.append(shown_strategy)
        if matched is not None:
            result, details = matched
            return FlagReasons(
                result=True,
                data=data,
                matched_variants=details.variants if "variant" in result else None,
                has_unsatisfied_dependency=unsatisfied,
            )
        return FlagReasons(
            result="unknown" if unknown else False,
            data=data,
            has_unsatisfied_dependency=unsatisfied,
        )

    def _strategy_result(
        self,
        name: str,
        planned: _Planned,
        context: bytes,
        constraints: list[dict[str, Any]],
        segments: list[dict[str, Any]],
    ) -> dict[str, Any]:
        if planned.status == "unevaluated":
            return {"enabled": "unknown", "evaluationStatus": "unevaluated"}
        if planned.status == "incomplete":
            possible = all(c["result"] for c in constraints) and all(s["result"] for s in segments)
            return {"enabled": "unknown" if possible else False, "evaluationStatus": "incomplete"}
        position = planned.position
        result: dict[str, Any] = {
            "enabled": bool(self._ask(self._strategies[position], name, context)),
            "evaluationStatus": "complete",
        }
        if planned.has_variants:
            engine = self._variants[position]
            with engine.lock:
                variant = answer_value(engine.variant(name.encode(), context))
            if variant and variant.get("enabled"):
                shown = {"name": variant["name"], "enabled": True}
                if variant.get("payload") is not None:
                    shown["payload"] = variant["payload"]
                result["variant"] = shown
                result["variants"] = planned.details.variants
        return result

    def _has_dependencies(self, name: str) -> bool:
        feature = self._payload.get(name)
        return bool(feature and feature.get("dependencies"))

    def _served_enabled(self, name: str) -> bool:
        feature = self._payload.get(name)
        return bool(feature and feature.get("enabled"))

    @staticmethod
    def _ask(engine: Engine | None, name: str, context: bytes) -> bool:
        if engine is None:
            return False
        with engine.lock:
            return bool(engine.enabled(name.encode(), context))


def _constraint_shown(
    constraint: dict[str, Any], result: bool, *, defaults: bool
) -> dict[str, Any]:
    """A constraint as Unleash's playground shows it: a strategy's own with `inverted` and
    `values` defaulted (a segment's as stored), `value` as a string when there is one, and
    its `result`."""
    shown: dict[str, Any] = {"inverted": False, "values": []} if defaults else {}
    shown |= constraint
    value = constraint.get("value")
    if value is None:
        shown.pop("value", None)
    else:
        shown["value"] = value if isinstance(value, str) else orjson.dumps(value).decode()
    shown["result"] = result
    return shown
