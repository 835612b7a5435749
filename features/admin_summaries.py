"""Strategies in words, for the Django admin: what a flag does in an environment ("50 % by
userId, if country IN NO, SE"), on the flag list, the flag's page and the strategy list.

A summary says what SDKs decide from the client payload: an environment that is off is "off";
one that is on serves its enabled strategies (paused ones are left out of the payload), and
with none of them it is on for everyone, as SDKs evaluate a flag without strategies.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from features.models import FeatureStrategy
from features.validators import MAX_WEIGHT, SINGLE_VALUE_OPERATORS

ON_FOR_EVERYONE = "on for everyone"
OFF = "off"
# How many values of a constraint, and strategies of an environment, a summary names.
SHOWN_VALUES = 5
SHOWN_STRATEGIES = 3
# Where a strategy type keeps the list it is on for (comma-separated, as Unleash stores them).
LISTED_PARAMETERS = {
    "userWithId": ("userIds", "users"),
    "remoteAddress": ("IPs", "IPs"),
    "applicationHostname": ("hostNames", "hosts"),
}
# The strategy order of the client payload and the API.
STRATEGY_ORDER = ("sort_order", "created_at", "id")


@dataclass(frozen=True)
class StrategyView:
    """What a summary reads of a strategy: its definition and its segments' names."""

    name: str
    title: str | None
    disabled: bool
    parameters: dict[str, Any]
    constraints: list[dict[str, Any]]
    variants: list[dict[str, Any]]
    segment_names: tuple[str, ...] = ()

    @classmethod
    def of(cls, strategy: FeatureStrategy) -> StrategyView:
        """From a strategy whose `segment_links__segment` are prefetched (or to be read)."""
        return cls(
            name=strategy.name,
            title=strategy.title,
            disabled=strategy.disabled,
            parameters=strategy.parameters,
            constraints=strategy.constraints,
            variants=strategy.variants,
            segment_names=tuple(link.segment.name for link in strategy.segment_links.all()),
        )


def strategies_by_environment(
    feature_environment_ids: Iterable[int],
) -> dict[int, list[StrategyView]]:
    """The strategies of these flag environments, in their order, with their segments' names:
    one query whatever their number (a row per strategy and segment)."""
    rows = (
        FeatureStrategy.objects.filter(feature_environment_id__in=list(feature_environment_ids))
        .order_by(*STRATEGY_ORDER, "segment_links__id")
        .values_list(
            "id",
            "feature_environment_id",
            "name",
            "title",
            "disabled",
            "parameters",
            "constraints",
            "variants",
            "segment_links__segment__name",
        )
    )
    found: dict[Any, tuple[int, dict[str, Any], list[str]]] = {}
    for (
        strategy_id,
        environment_id,
        name,
        title,
        disabled,
        parameters,
        constraints,
        variants,
        segment,
    ) in rows:
        if strategy_id not in found:
            fields = {
                "name": name,
                "title": title,
                "disabled": disabled,
                "parameters": parameters,
                "constraints": constraints,
                "variants": variants,
            }
            found[strategy_id] = (environment_id, fields, [])
        if segment is not None:
            found[strategy_id][2].append(segment)
    grouped: dict[int, list[StrategyView]] = defaultdict(list)
    for environment_id, fields, segments in found.values():
        grouped[environment_id].append(StrategyView(**fields, segment_names=tuple(segments)))
    return grouped


def environment_summary(enabled: bool, strategies: Sequence[StrategyView], flag_name: str) -> str:
    """What the flag does in one environment, its strategies (in order) joined by "or"."""
    if not enabled:
        return OFF
    texts = [strategy_summary(s, flag_name) for s in strategies if not s.disabled]
    if not texts or ON_FOR_EVERYONE in texts:
        return ON_FOR_EVERYONE
    shown = texts[:SHOWN_STRATEGIES]
    if (more := len(texts) - len(shown)) > 0:
        shown.append(f"{more} more strateg{'y' if more == 1 else 'ies'}")
    return "; or ".join(shown)


def strategy_summary(strategy: StrategyView, flag_name: str) -> str:
    """One strategy: who it is on for, under which conditions, with which variants."""
    conditions = [f"in segment {name}" for name in strategy.segment_names]
    conditions += [constraint_summary(c) for c in strategy.constraints]
    whom = _whom(strategy, flag_name)
    if whom is None:  # on for everyone the conditions let through
        text = f"on if {' and '.join(conditions)}" if conditions else ON_FOR_EVERYONE
    else:
        text = f"{whom}, if {' and '.join(conditions)}" if conditions else whom
    if strategy.variants:
        weights = ", ".join(
            f"{v.get('name')} {_percent(v.get('weight', 0))}" for v in strategy.variants
        )
        text += f" (variants {weights})"
    if strategy.title:
        text = f"{strategy.title}: {text}"
    if strategy.disabled:
        text += " (paused)"
    return text


def constraint_summary(constraint: dict[str, Any]) -> str:
    """`country IN NO, SE`; `not appVersion SEMVER_LT 2.0.0`; `(any case)` when so."""
    operator = constraint.get("operator", "")
    if operator in SINGLE_VALUE_OPERATORS or operator == "REGEX":
        compared = str(constraint.get("value", ""))
    else:
        compared = _listed([str(v) for v in constraint.get("values") or []])
    text = f"{constraint.get('contextName', '')} {operator} {compared}".rstrip()
    if constraint.get("inverted"):
        text = f"not {text}"
    if constraint.get("caseInsensitive"):
        text += " (any case)"
    return text


def _whom(strategy: StrategyView, flag_name: str) -> str | None:
    """Who the strategy is on for, or None for everyone (the conditions aside)."""
    parameters = strategy.parameters or {}
    if strategy.name == "default":
        return None
    if strategy.name == "flexibleRollout":
        rollout = str(parameters.get("rollout", "100"))
        if rollout == "100":
            return None
        if rollout == "0":
            return "nobody (0 %)"
        stickiness = parameters.get("stickiness") or "default"
        text = {
            "default": f"{rollout} % by default stickiness",
            "random": f"{rollout} % at random",
        }.get(stickiness, f"{rollout} % by {stickiness}")
        group = parameters.get("groupId")
        if group and group != flag_name:
            text += f" (group {group})"
        return text
    if strategy.name in LISTED_PARAMETERS:
        key, label = LISTED_PARAMETERS[strategy.name]
        items = [item.strip() for item in str(parameters.get(key, "")).split(",") if item.strip()]
        return f"on for {label} {_listed(items)}" if items else f"on for no {label}"
    named = ", ".join(f"{key}={value}" for key, value in sorted(parameters.items()))
    return f"{strategy.name} ({named})" if named else strategy.name


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:SHOWN_VALUES])
    if len(items) > SHOWN_VALUES:
        shown += f" and {len(items) - SHOWN_VALUES} more"
    return shown


def _percent(weight: Any) -> str:
    try:
        return f"{float(weight) * 100 / MAX_WEIGHT:g} %"
    except (TypeError, ValueError):
        return str(weight)
