"""Context fields and strategy definitions, stored as Unleash 8.2 stores them (its
`context_fields` and `strategies` tables): the built-in ones are seeded by a data migration,
custom ones are written by `definitions.services` only."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

# Unleash's `nameType`: 1 to 100 URL-friendly characters.
NAME_MAX_LENGTH = 100
# The context fields Unleash 8.2 seeds (migration 0002): read-only in the Django admin.
BUILT_IN_CONTEXT_FIELDS = frozenset(
    {"environment", "userId", "appName", "currentTime", "sessionId"}
)


class ContextField(models.Model):
    """A field of the Unleash context that constraints may name (`userId`, `appName`, a custom
    `tenant`), with the values it may take when it lists any, and whether custom stickiness may
    use it."""

    name = models.CharField(max_length=NAME_MAX_LENGTH, primary_key=True)
    description = models.TextField(null=True, blank=True)
    stickiness = models.BooleanField(default=False)
    sort_order = models.IntegerField(default=0)
    # [{"value": "gold", "description": "..."}, ...]: legal values, in the order given.
    legal_values = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class StrategyDefinition(models.Model):
    """A strategy type a flag's strategy may name: Unleash's built-in ones (`editable: false`)
    and custom ones with the parameters an SDK's own implementation reads."""

    name = models.CharField(max_length=NAME_MAX_LENGTH, primary_key=True)
    title = models.TextField(null=True, blank=True)
    display_name = models.TextField(null=True, blank=True)
    description = models.TextField(null=True, blank=True)
    # [{"name": "rollout", "type": "percentage", "description": "", "required": false}, ...]
    parameters = models.JSONField(default=list, blank=True)
    built_in = models.BooleanField(default=False)
    deprecated = models.BooleanField(default=False)
    sort_order = models.IntegerField(default=9999)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["sort_order", "name"]

    def __str__(self) -> str:
        return self.name

    @property
    def editable(self) -> bool:
        return not self.built_in
