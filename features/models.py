"""Feature flags, their per-environment state (strategies, variants), tags, lifecycle stages and
dependencies.

Value objects that the specification nests inside a flag environment (constraints, strategy
variants, variants, parameters) are JSON columns whose shape `features.validators` checks.
"""

import uuid
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from features.validators import (
    validate_constraints,
    validate_dependency_variants,
    validate_flag_name,
    validate_parameters,
    validate_strategy_variants,
    validate_variants,
)
from projects.models import Environment, Project


class FeatureType(models.TextChoices):
    EXPERIMENT = "experiment", "Experiment"
    KILL_SWITCH = "kill-switch", "Kill switch"
    RELEASE = "release", "Release"
    OPERATIONAL = "operational", "Operational"
    PERMISSION = "permission", "Permission"

    @property
    def expected_lifetime(self) -> timedelta | None:
        """How long a flag of this type is expected to live: an older flag that is not stale
        is "potentially stale". None: never (kill switches, permissions)."""
        return _EXPECTED_LIFETIMES.get(self.value)


_EXPECTED_LIFETIMES: dict[str, timedelta] = {
    FeatureType.RELEASE: timedelta(days=40),
    FeatureType.EXPERIMENT: timedelta(days=40),
    FeatureType.OPERATIONAL: timedelta(days=7),
}


class Feature(models.Model):
    name = models.CharField(max_length=255, primary_key=True, validators=[validate_flag_name])
    # db_index off: the feature_project_state index below starts with the project.
    project = models.ForeignKey(
        Project, on_delete=models.PROTECT, related_name="features", db_index=False
    )
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
    tags = models.ManyToManyField("Tag", through="FeatureTag", related_name="features", blank=True)

    class Meta:
        ordering = ["created_at", "name"]
        indexes = [
            # Per-project counts of active, stale and potentially stale flags.
            models.Index(
                fields=["project", "archived_at", "stale", "type", "created_at"],
                name="feature_project_state",
            ),
            # lastReportedFlagUsage of a project: its newest usage, one probe per project.
            models.Index(
                models.F("project"),
                models.F("last_seen_at").desc(),
                name="feature_last_seen",
                condition=models.Q(last_seen_at__isnull=False),
            ),
            # Potentially stale counts: the flags still younger than their type's lifetime
            # (the last 7 or 40 days), one range scan per lifetime for all projects.
            models.Index(
                fields=["type", "created_at", "project"],
                name="feature_fresh",
                condition=models.Q(archived_at__isnull=True, stale=False),
            ),
            # The feature search's pages in its default order (oldest first, then by name),
            # and its counts: the columns its filters read are included, so a count is an
            # index-only scan (docs/search.md). Trigram indexes for its text search are made
            # on PostgreSQL by migration 0017.
            models.Index(
                fields=["created_at", "name"],
                include=["type", "stale", "project"],
                name="feature_search_active",
                condition=models.Q(archived_at__isnull=True),
            ),
            models.Index(
                fields=["created_at", "name"],
                name="feature_search_archived",
                condition=models.Q(archived_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


class ProjectFlagCount(models.Model):
    """How many flags of a project are not archived, per type and stale state.

    Kept by the database itself: triggers on the flags' table (`flagadmin.core.derived.flag_counts`)
    change the counts in the same transaction as every insert, delete, archive, revive, stale or
    type change and move of a flag, whatever made it (services, the Django admin, a bulk
    `update()`), with row-level upserts that concurrent writers cannot lose. The project list
    reads these few rows instead of counting flags; `manage.py repairprojectstats` recomputes
    them from the flags."""

    # db_index off: the unique (project, type, stale) index starts with the project.
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="flag_counts", db_index=False
    )
    type = models.CharField(max_length=32)
    stale = models.BooleanField()
    total = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "type", "stale"], name="project_flag_count_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}: {self.total} {self.type}{' stale' if self.stale else ''}"


class ProjectFlagDay(models.Model):
    """How many flags of a project that are neither archived nor stale were created on each
    day (UTC), per type.

    Kept by the database like `ProjectFlagCount` (`flagadmin.core.derived.flag_days`). The
    potentially-stale count of a few projects (the projects list's entries computed again after a
    write) reads the flags younger than their type's lifetime from these rows: a sum over at most 40
    days, and the flags of the cutoff's own day, instead of every young flag (a project receiving
    flags all day has thousands)."""

    # db_index off: the unique (project, type, day) index starts with the project.
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="flag_days", db_index=False
    )
    type = models.CharField(max_length=32)
    day = models.DateField()
    total = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "type", "day"], name="project_flag_day_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}: {self.total} {self.type} created {self.day}"


class ProjectFlagActivity(models.Model):
    """When a project's flags were last changed and last used: the newest audit event about a
    flag that is in the project (lastUpdatedAt) and the newest `last_seen_at` of its flags,
    archived ones included (lastReportedFlagUsage).

    Kept by the database like `ProjectFlagCount` (`flagadmin.core.derived.flag_activity`): a new
    event or a newer usage moves the time forward in the transaction that writes it; deleting or
    moving a flag, a usage time going back, or deleting an event recomputes the project's times (an
    index walk and a probe)."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, primary_key=True, related_name="flag_activity"
    )
    last_flag_event_at = models.DateTimeField(null=True, blank=True)
    last_flag_seen_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "project flag activity"

    def __str__(self) -> str:
        return f"{self.project_id}: {self.last_flag_event_at}, {self.last_flag_seen_at}"


class FeatureEnvironment(models.Model):
    """A flag's state in one environment."""

    # db_index off: the unique (feature, environment) index serves lookups by flag.
    feature = models.ForeignKey(
        Feature, on_delete=models.CASCADE, related_name="environments", db_index=False
    )
    environment = models.ForeignKey(
        Environment, on_delete=models.CASCADE, related_name="feature_environments"
    )
    enabled = models.BooleanField(default=False)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    # The flag's variants in this environment (Unleash keeps them per environment since 4.18).
    variants = models.JSONField(default=list, blank=True, validators=[validate_variants])

    class Meta:
        ordering = ["environment__sort_order", "environment__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["feature", "environment"], name="feature_environment_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.feature_id}@{self.environment_id}"


class TagType(models.Model):
    """A kind of tag (`simple` is seeded). Managed in the Django admin."""

    name = models.CharField(max_length=50, primary_key=True)
    description = models.TextField(blank=True, default="")
    icon = models.CharField(max_length=255, null=True, blank=True)
    # Unleash's hexadecimal colour (`#RRGGBB`), shown beside the tags of this type.
    color = models.CharField(max_length=7, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Tag(models.Model):
    """A value of a tag type, e.g. `simple:team-red`. Flags share tags through FeatureTag."""

    # db_index off: the unique (type, value) index serves lookups by type.
    type = models.ForeignKey(TagType, on_delete=models.CASCADE, related_name="tags", db_index=False)
    value = models.CharField(max_length=50)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["type", "value"]
        constraints = [
            # Two creations that bring the same new value race on this, never duplicate it.
            models.UniqueConstraint(fields=["type", "value"], name="tag_type_value_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.type_id}:{self.value}"


class FeatureTag(models.Model):
    feature = models.ForeignKey(
        Feature, on_delete=models.CASCADE, related_name="feature_tags", db_index=False
    )
    tag = models.ForeignKey(Tag, on_delete=models.CASCADE, related_name="feature_tags")
    created_at = models.DateTimeField(default=timezone.now)
    created_by_user_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["feature", "tag"], name="feature_tag_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.feature_id} #{self.tag}"


class Segment(models.Model):
    """A reusable list of constraints that strategies reference by id."""

    name = models.CharField(max_length=255, unique=True)
    description = models.TextField(null=True, blank=True)
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, null=True, blank=True, related_name="segments"
    )
    constraints = models.JSONField(default=list, blank=True, validators=[validate_constraints])
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name


class FeatureStrategy(models.Model):
    """An activation strategy of a flag in one environment."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    feature_environment = models.ForeignKey(
        FeatureEnvironment, on_delete=models.CASCADE, related_name="strategies", db_index=False
    )
    # The strategy type, e.g. `default`, `flexibleRollout`.
    name = models.CharField(max_length=255)
    title = models.CharField(max_length=255, null=True, blank=True)
    disabled = models.BooleanField(default=False)
    sort_order = models.IntegerField(default=9999)
    parameters = models.JSONField(default=dict, blank=True, validators=[validate_parameters])
    constraints = models.JSONField(default=list, blank=True, validators=[validate_constraints])
    variants = models.JSONField(default=list, blank=True, validators=[validate_strategy_variants])
    segments = models.ManyToManyField(
        Segment, through="FeatureStrategySegment", related_name="strategies", blank=True
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["sort_order", "created_at"]
        verbose_name_plural = "feature strategies"
        indexes = [
            models.Index(
                fields=["feature_environment", "sort_order", "created_at"],
                name="strategy_feature_env_order",
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.name


class FeatureStrategySegment(models.Model):
    strategy = models.ForeignKey(
        FeatureStrategy, on_delete=models.CASCADE, related_name="segment_links", db_index=False
    )
    # A segment in use cannot be deleted out from under the strategies that use it.
    segment = models.ForeignKey(Segment, on_delete=models.PROTECT, related_name="strategy_links")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["strategy", "segment"], name="strategy_segment_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.strategy_id} uses {self.segment_id}"


class LifecycleStage(models.TextChoices):
    INITIAL = "initial", "Initial"
    PRE_LIVE = "pre-live", "Pre-live"
    LIVE = "live", "Live"
    COMPLETED = "completed", "Completed"
    ARCHIVED = "archived", "Archived"


class FeatureLifecycleStage(models.Model):
    """When a flag entered a stage. The flag's current stage is the one entered last (a flag has
    a handful of rows; the unique index finds them, so no second index slows the inserts)."""

    feature = models.ForeignKey(
        Feature, on_delete=models.CASCADE, related_name="lifecycle_stages", db_index=False
    )
    stage = models.CharField(max_length=32, choices=LifecycleStage.choices)
    entered_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["feature", "-entered_at", "-id"]
        constraints = [
            # A flag enters each stage once.
            models.UniqueConstraint(fields=["feature", "stage"], name="feature_lifecycle_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.feature_id}: {self.stage}"


class FeatureDependency(models.Model):
    """The child flag is only on when its parent is enabled (or, when `enabled` is false,
    disabled), and, if `variants` is not empty, resolves to one of those variants."""

    parent = models.ForeignKey(Feature, on_delete=models.CASCADE, related_name="dependents")
    child = models.ForeignKey(
        Feature, on_delete=models.CASCADE, related_name="dependencies", db_index=False
    )
    enabled = models.BooleanField(default=True)
    variants = models.JSONField(default=list, blank=True, validators=[validate_dependency_variants])

    class Meta:
        ordering = ["id"]
        verbose_name_plural = "feature dependencies"
        constraints = [
            models.UniqueConstraint(fields=["child", "parent"], name="feature_dependency_unique"),
            models.CheckConstraint(
                condition=~models.Q(parent=models.F("child")), name="feature_dependency_not_self"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.child_id} depends on {self.parent_id}"


class FavoriteFeature(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="favorite_features"
    )
    feature = models.ForeignKey(
        Feature, on_delete=models.CASCADE, related_name="favorites", db_index=False
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["feature", "user"], name="favorite_feature_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} ♥ {self.feature_id}"


class FeatureUsageBucket(models.Model):
    """How often applications evaluated a flag to on (`yes`) and off (`no`) in one environment
    within one hour, as SDKs report it (`POST /api/client/metrics`). Reports add to the bucket
    of their hour (one upsert per report), so the table grows by hours, not by reports.

    Keyed by the flag's name rather than a foreign key: SDKs report names they know, and a
    report must neither fail nor wait on a flag being archived or deleted meanwhile."""

    feature_name = models.CharField(max_length=255)
    environment = models.CharField(max_length=100)
    app_name = models.CharField(max_length=255)
    hour = models.DateTimeField(help_text="Start of the hour (UTC) the counts belong to.")
    yes = models.BigIntegerField(default=0)
    no = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["-hour", "feature_name", "environment", "app_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["feature_name", "environment", "app_name", "hour"],
                name="usage_bucket_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.feature_name}@{self.environment} {self.hour:%Y-%m-%d %H}h"


class ClientInstance(models.Model):
    """An SDK instance that registered (`POST /api/client/register`) or sent metrics."""

    app_name = models.CharField(max_length=255)
    instance_id = models.CharField(max_length=255)
    environment = models.CharField(max_length=100)
    sdk_version = models.CharField(max_length=255, blank=True, default="")
    strategies = models.JSONField(default=list, blank=True)
    interval = models.BigIntegerField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    last_seen_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["app_name", "instance_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["app_name", "instance_id", "environment"], name="client_instance_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.app_name} ({self.instance_id})"
