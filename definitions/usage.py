"""Which flags use a context field or a strategy type: asked of the features app, which
registers its answer when it loads (`features.apps`), since this app may not import it (the
one-way rule)."""

from __future__ import annotations

from typing import Protocol


class ContextFieldUsage(Protocol):
    def is_used(self, context_name: str) -> bool:
        """Whether a constraint of a strategy of a flag that is not archived names the field
        (segments' constraints do not count, as in Unleash)."""
        ...

    def counts(self) -> dict[str, tuple[int, int]]:
        """For each context field named by such a constraint: how many projects and how many
        flags, as Unleash's list shows them (`usedInProjects`, `usedInFeatures`)."""
        ...

    def strategies_using(self, context_name: str) -> list[dict[str, str]]:
        """Those strategies as Unleash lists them: `id`, `projectId`, `featureName`,
        `strategyName`, `environment`."""
        ...

    def strategy_type_used(self, strategy_name: str) -> bool:
        """Whether a strategy of any flag, archived ones included, is of that type."""
        ...


class _Unused:
    def is_used(self, context_name: str) -> bool:
        return False

    def counts(self) -> dict[str, tuple[int, int]]:
        return {}

    def strategies_using(self, context_name: str) -> list[dict[str, str]]:
        return []

    def strategy_type_used(self, strategy_name: str) -> bool:
        return False


_usage: ContextFieldUsage = _Unused()


def register_context_field_usage(usage: ContextFieldUsage) -> None:
    global _usage
    _usage = usage


def context_field_usage() -> ContextFieldUsage:
    return _usage
