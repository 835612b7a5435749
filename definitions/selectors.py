"""What other apps read of the definitions: the strategy names and context field names an
operator can pick (the Django admin's strategy editor, validation)."""

from __future__ import annotations

# Unleash 8.2's built-in strategies and context fields, until stored definitions replace them.
BUILT_IN_STRATEGIES = (
    "default",
    "flexibleRollout",
    "userWithId",
    "remoteAddress",
    "applicationHostname",
)
BUILT_IN_CONTEXT_FIELDS = (
    "appName",
    "currentTime",
    "environment",
    "remoteAddress",
    "sessionId",
    "userId",
)


def strategy_names() -> list[str]:
    """The names of the strategies a flag may use, built-in first."""
    return list(BUILT_IN_STRATEGIES)


def context_field_names() -> list[str]:
    """The context fields a constraint or a stickiness may name."""
    return list(BUILT_IN_CONTEXT_FIELDS)
