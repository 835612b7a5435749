"""Feature flags and their per-environment state."""

from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from projects.models import Environment, Project


class FeatureType(models.TextChoices):
    EXPERIMENT = "experiment", "Experiment"
    KILL_SWITCH = "kill-switch", "Kill switch"
    RELEASE = "release", "Release"
    OPERATIONAL = "operational", "Operational"
    PERMISSION = "permission", "Permission"


# Expected lifetime of each flag type; older flags that are not stale are "potentially stale".
# None: never potentially stale.
FEATURE_TYPE_LIFETIME: dict[str, timedelta | None] = {
    FeatureType.RELEASE: timedelta(days=40),
    FeatureType.EXPERIMENT: timedelta(days=40),
    FeatureType.OPERATIONAL: timedelta(days=7),
    FeatureType.KILL_SWITCH: None,
    FeatureType.PERMISSION: None,
}


class Feature(models.Model):
    name = models.CharField(max_length=255, primary_key=True)
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="features")
    type = models.CharField(max_length=32, choices=FeatureType.choices, default=FeatureType.RELEASE)
    description = models.TextField(null=True, blank=True)
    stale = models.BooleanField(default=False)
    impression_data = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="created_features",
    )
    archived_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "name"]
        indexes = [
            # Per-project counts of active, stale and potentially stale flags.
            models.Index(
                fields=["project", "archived_at", "stale", "type", "created_at"],
                name="feature_project_state",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


class FeatureEnvironment(models.Model):
    """A flag's state in one environment."""

    feature = models.ForeignKey(Feature, on_delete=models.CASCADE, related_name="environments")
    environment = models.ForeignKey(
        Environment, on_delete=models.CASCADE, related_name="feature_environments"
    )
    enabled = models.BooleanField(default=False)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["environment__sort_order", "environment__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["feature", "environment"], name="feature_environment_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.feature_id}@{self.environment_id}"
