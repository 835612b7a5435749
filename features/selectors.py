"""Reading flags: a fixed number of queries per flag, whatever its number of environments,
strategies or tags, and whatever the number of flags in the instance."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import (
    CharField,
    Count,
    Exists,
    Func,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    prefetch_related_objects,
)

from features.models import (
    FavoriteFeature,
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureLifecycleStage,
    FeatureStrategy,
    FeatureTag,
)
from flagadmin.core.db import read_snapshot
from flagadmin.core.models import AuditEvent

User = get_user_model()

# What `load_feature_detail` prefetches; `create_feature` attaches the same attributes.
DETAIL_PREFETCHES = (
    Prefetch(
        "environments",
        queryset=FeatureEnvironment.objects.select_related("environment").prefetch_related(
            Prefetch(
                "strategies",
                queryset=FeatureStrategy.objects.prefetch_related("segment_links"),
                to_attr="strategy_list",
            )
        ),
        to_attr="environment_list",
    ),
    Prefetch(
        "feature_tags", queryset=FeatureTag.objects.select_related("tag"), to_attr="tag_links"
    ),
    Prefetch(
        "lifecycle_stages",
        queryset=FeatureLifecycleStage.objects.order_by("-entered_at", "-id"),
        to_attr="stage_list",
    ),
    Prefetch("dependencies", queryset=FeatureDependency.objects.all(), to_attr="dependency_list"),
    Prefetch(
        "dependents",
        queryset=FeatureDependency.objects.only("id", "parent_id", "child_id"),
        to_attr="dependent_links",
    ),
)


def feature_collaborators(feature_name: str) -> list:
    """Users who changed the flag (its audit events), most recent change first; one query."""
    events = AuditEvent.objects.filter(feature_name=feature_name)
    latest = events.filter(created_by_user_id=OuterRef("pk")).order_by("-created_at")
    return list(
        User.objects.filter(pk__in=events.values("created_by_user_id"))
        .annotate(last_change=Subquery(latest.values("created_at")[:1]))
        .only("id", "name", "username", "email", "image_url")
        .order_by("-last_change", "id")
    )


def detail_queryset(user: object) -> QuerySet[Feature]:
    """Flags with their creator and, for a caller that is a user, whether it is one of their
    favorites: what `load_feature_detail` needs of the flag's own row, in the lookup's query."""
    queryset = Feature.objects.select_related("created_by")
    if isinstance(user, User) and user.pk is not None:
        favorites = FavoriteFeature.objects.filter(feature=OuterRef("pk"), user=user)
        queryset = queryset.annotate(is_favorite=Exists(favorites))
    return queryset


def load_feature_detail(feature: Feature) -> Feature:
    """`feature` (found through `detail_queryset`) with everything `featureSchema` shows: its
    environments with their strategies, tags, lifecycle, dependencies and collaborators, in a
    fixed number of queries."""
    if not hasattr(feature, "is_favorite"):
        feature.is_favorite = False
    prefetch_related_objects([feature], *DETAIL_PREFETCHES)
    feature.tag_list = [
        {"type": link.tag.type_id, "value": link.tag.value} for link in feature.tag_links
    ]
    feature.current_stage = feature.stage_list[0] if feature.stage_list else None
    feature.child_names = [link.child_id for link in feature.dependent_links]
    feature.collaborator_list = feature_collaborators(feature.name)
    return feature


class JsonArrayLength(Func):
    """The length of a JSON array column, computed by the database (rather than each array
    decoded in Python to be counted); 0 for a value that is not an array (as SQLite's
    JSON_ARRAY_LENGTH answers; PostgreSQL's would fail the whole statement)."""

    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra_context):
        template = (
            "CASE WHEN JSONB_TYPEOF(%(expressions)s) = 'array' "
            "THEN JSONB_ARRAY_LENGTH(%(expressions)s) ELSE 0 END"
        )
        return super().as_sql(compiler, connection, template=template, **extra_context)

    def as_sqlite(self, compiler, connection, **extra_context):
        template = "COALESCE(JSON_ARRAY_LENGTH(%(expressions)s), 0)"
        return super().as_sql(compiler, connection, template=template, **extra_context)


class UtcTimestampText(Func):
    """A datetime column as the API writes it (`2026-01-02T03:04:05.123456Z`, the fraction left
    out when it is zero, as DRF and orjson do), written by the database. Loading a timestamptz
    into a Python datetime costs about 5 µs a value through Django's loader, most of the CPU
    of a list of thousands of flags; the text costs a tenth of that."""

    output_field = CharField()

    def as_postgresql(self, compiler, connection, **extra_context):
        utc = "(%(expressions)s AT TIME ZONE 'UTC')"
        template = (
            f"TO_CHAR({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS') || CASE WHEN "
            f"MOD(EXTRACT(MICROSECONDS FROM {utc})::bigint, 1000000) = 0 THEN '' "
            f"ELSE TO_CHAR({utc}, '.US') END || 'Z'"
        )
        return super().as_sql(compiler, connection, template=template, **extra_context)

    def as_sqlite(self, compiler, connection, **extra_context):
        # Django keeps datetimes in SQLite as UTC text, `YYYY-MM-DD HH:MM:SS[.ffffff]`.
        template = "REPLACE(%(expressions)s, ' ', 'T') || 'Z'"
        return super().as_sql(compiler, connection, template=template, **extra_context)


def list_project_features(*, project_id: str, user: object) -> list[dict[str, Any]]:
    """The project's active flags as `projectFeatureSchema` shows them, oldest first (then by
    name), each with its tags (in the order they were added) and its environments (by sort
    order, then name) with their strategy counts: three queries whatever the number of flags,
    read from one snapshot on PostgreSQL, as plain rows (no model instance per flag,
    environment or tag: at thousands of flags those cost ten times the rest)."""
    flags = Feature.objects.filter(project_id=project_id, archived_at__isnull=True)
    if isinstance(user, User) and user.pk is not None:
        favorites = FavoriteFeature.objects.filter(feature=OuterRef("pk"), user=user)
        flags = flags.annotate(favorite=Exists(favorites))
    else:
        flags = flags.annotate(favorite=Value(False))
    flags = flags.annotate(
        created_text=UtcTimestampText("created_at"), last_seen_text=UtcTimestampText("last_seen_at")
    )
    of_flags = {"feature__project_id": project_id, "feature__archived_at__isnull": True}
    environments = (
        FeatureEnvironment.objects.filter(**of_flags)
        .annotate(
            last_seen_text=UtcTimestampText("last_seen_at"),
            variant_count=JsonArrayLength("variants"),
            strategy_count=Count("strategies"),
            enabled_strategy_count=Count("strategies", filter=Q(strategies__disabled=False)),
        )
        .order_by("environment__sort_order", "environment__name")
    )
    tags = FeatureTag.objects.filter(**of_flags).order_by("id")
    with read_snapshot():
        flag_rows = list(
            flags.order_by("created_at", "name").values_list(
                "name",
                "type",
                "description",
                "stale",
                "favorite",
                "impression_data",
                "created_text",
                "last_seen_text",
            )
        )
        environment_rows = list(
            environments.values_list(
                "feature_id",
                "environment_id",
                "environment__type",
                "enabled",
                "environment__sort_order",
                "variant_count",
                "last_seen_text",
                "strategy_count",
                "enabled_strategy_count",
            )
        )
        tag_rows = list(tags.values_list("feature_id", "tag__type_id", "tag__value"))

    entries = {
        name: {
            "name": name,
            "type": type_,
            "description": description,
            "stale": stale,
            "favorite": favorite,
            "impressionData": impression_data,
            "createdAt": created_at,
            "lastSeenAt": last_seen_at,
            "tags": [],
            "environments": [],
        }
        for (
            name,
            type_,
            description,
            stale,
            favorite,
            impression_data,
            created_at,
            last_seen_at,
        ) in flag_rows
    }
    # Rows of a flag the first read did not return are left out with it: a guard, the reads
    # share one snapshot (`read_snapshot`, SQLite included).
    for name, tag_type, value in tag_rows:
        if (entry := entries.get(name)) is not None:
            entry["tags"].append({"type": tag_type, "value": value})
    for (
        name,
        environment,
        environment_type,
        enabled,
        sort_order,
        variant_count,
        last_seen_at,
        strategy_count,
        enabled_strategy_count,
    ) in environment_rows:
        if (entry := entries.get(name)) is None:
            continue
        entry["environments"].append(
            {
                "name": environment,
                "type": environment_type,
                "enabled": enabled,
                "sortOrder": sort_order,
                "variantCount": variant_count,
                "lastSeenAt": last_seen_at,
                "hasStrategies": strategy_count > 0,
                "hasEnabledStrategies": enabled_strategy_count > 0,
                "strategyCount": strategy_count,
            }
        )
    return list(entries.values())
