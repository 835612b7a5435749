"""`GET /api/admin/search/features`: flags of every project, filtered, sorted and paged as
Unleash 8.2's feature search does them ([docs/search.md](../docs/search.md)).

Two steps, so that the cost follows the page and not the instance: one statement finds the
page's names (and one counts the matches), each served by an index of `Feature`; a fixed
number of statements then read what the page shows of those flags (environments, tags,
segments, lifecycle, dependencies, the last hour's usage)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import (
    Count,
    Exists,
    F,
    OrderBy,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
)
from django.utils import timezone

from features.models import (
    FavoriteFeature,
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureLifecycleStage,
    FeatureStrategySegment,
    FeatureTag,
    FeatureType,
    FeatureUsageBucket,
)
from features.selectors import JsonArrayLength
from flagadmin.api.search import Filter, any_term

User = get_user_model()

SORT_FIELDS = ("createdAt", "name", "type", "stale", "project", "lastSeenAt")
STATES = ("active", "stale", "potentially-stale")
ARCHIVED_STAGE = "archived"
_SORT_COLUMNS = {"name": "name", "type": "type", "stale": "stale", "project": "project_id"}


@dataclass(frozen=True)
class FeatureSearch:
    """What `/search/features` was asked, validated (`overview.search_views`)."""

    terms: list[str] = field(default_factory=list)
    project: Filter | None = None
    type: Filter | None = None
    created_by: Filter | None = None
    tag: Filter | None = None
    segment: Filter | None = None
    state: Filter | None = None
    lifecycle: Filter | None = None
    created_at: Filter | None = None
    last_seen_at: Filter | None = None
    favorite: Filter | None = None
    status: list[tuple[str, bool]] = field(default_factory=list)
    archived: bool = False
    favorites_first: bool = False
    sort_by: str = "createdAt"
    sort_order: str = "asc"
    offset: int = 0
    limit: int = 50


def _in(column: str, found: Filter) -> Q:
    condition = Q(**{f"{column}__in": found.values})
    return ~condition if found.negated else condition


def _potentially_stale() -> Q:
    """Not stale, and older than its type's expected lifetime (the projects list's rule)."""
    now = timezone.now()
    older = Q(pk__in=[])
    for flag_type in FeatureType:
        lifetime = flag_type.expected_lifetime
        if lifetime is not None:
            older |= Q(type=flag_type.value, created_at__lt=now - lifetime)
    return Q(stale=False) & older


def _state(found: Filter) -> Q:
    """Unleash's `applyStaleConditions`: `active` is not stale, `stale` is stale, and
    `potentially-stale` not stale yet past its lifetime."""
    wanted = set(found.values)
    if "potentially-stale" not in wanted:
        condition = Q(stale__in=[value != "active" for value in wanted])
    elif wanted == set(STATES):
        condition = Q()
    elif wanted == {"potentially-stale"}:
        condition = _potentially_stale()
    elif wanted == {"stale", "potentially-stale"}:
        condition = Q(stale=True) | _potentially_stale()
    else:  # active with potentially-stale: Unleash reads it as not stale
        condition = Q(stale=False)
    if not condition:
        return Q(pk__in=[]) if found.negated else Q()
    return ~condition if found.negated else condition


def _tagged(found: Filter) -> Q:
    # A tag named twice is one tag: all of them means each distinct one (Unleash 8.2 counts the
    # repeats and so matches no flag).
    split = (value.split(":", 1) for value in found.values)
    pairs = dict.fromkeys((tag_type.strip(), value.strip()) for tag_type, value in split)
    matching = Q(pk__in=[])
    for tag_type, value in pairs:
        matching |= Q(tag__type_id=tag_type, tag__value=value)
    links = FeatureTag.objects.filter(matching)
    return _members(found, links, "feature_id", "tag_id", len(pairs))


def _with_segment(found: Filter) -> Q:
    links = FeatureStrategySegment.objects.filter(segment__name__in=found.values)
    flag = "strategy__feature_environment__feature_id"
    return _members(found, links, flag, "segment_id", len(set(found.values)))


def _members(found: Filter, links: QuerySet, flag: str, value: str, wanted: int) -> Q:
    """Unleash's `applyMultiQueryParams`: any of (`INCLUDE`, `INCLUDE_ANY_OF`), none of
    (`DO_NOT_INCLUDE`, `EXCLUDE_IF_ANY_OF`), all of (`INCLUDE_ALL_OF`) or not all of
    (`EXCLUDE_ALL`) the values."""
    if found.operator in ("INCLUDE_ALL_OF", "EXCLUDE_ALL"):
        names = (
            links.order_by()
            .values(flag)
            .annotate(found=Count(value, distinct=True))
            .filter(found=wanted)
            .values(flag)
        )
        condition = Q(name__in=names)
        return ~condition if found.operator == "EXCLUDE_ALL" else condition
    condition = Q(name__in=links.values(flag))
    return ~condition if found.negated else condition


def _in_latest_stage(stages: list[str]) -> Q:
    """Flags whose latest stage is one of `stages`: their rows of those stages with no later
    row of the same flag (one anti-join, where a per-flag subquery would run 100,000 times)."""
    later = FeatureLifecycleStage.objects.filter(feature_id=OuterRef("feature_id")).filter(
        Q(entered_at__gt=OuterRef("entered_at"))
        | Q(entered_at=OuterRef("entered_at"), id__gt=OuterRef("id"))
    )
    latest = FeatureLifecycleStage.objects.filter(stage__in=stages).filter(~Exists(later))
    return Q(name__in=latest.values("feature_id"))


def _lifecycle_and_archived(flags: QuerySet, found: Filter | None, archived: bool) -> QuerySet:
    """Unleash's `applyLifecycleAndArchivedFilters`: `archived` as a stage means archived
    flags, the other stages are those of active flags."""
    if found is None:
        return flags.filter(archived_at__isnull=not archived)
    asks_archived = ARCHIVED_STAGE in found.values
    stages = [value for value in found.values if value != ARCHIVED_STAGE]
    if found.negated:
        if archived and not asks_archived:
            return flags.filter(archived_at__isnull=False)
        flags = flags.filter(archived_at__isnull=True)
        # A flag that never entered a stage is in none of them, so it stays.
        return flags.exclude(_in_latest_stage(stages)) if stages else flags
    if archived:
        flags = flags.filter(archived_at__isnull=False)
        return flags.filter(_in_latest_stage(stages)) if stages and not asks_archived else flags
    wanted = Q(pk__in=[])
    if stages:
        wanted |= _in_latest_stage(stages)
    if asks_archived:
        wanted |= Q(archived_at__isnull=False)
    else:
        wanted &= Q(archived_at__isnull=True)
    return flags.filter(wanted)


def _status(status: list[tuple[str, bool]]) -> Q:
    """Flags on (or off) in any of the named environments."""
    matching = Q(pk__in=[])
    for environment, enabled in status:
        matching |= Q(environment_id=environment, enabled=enabled)
    return Q(Exists(FeatureEnvironment.objects.filter(matching, feature=OuterRef("pk"))))


def matching_flags(search: FeatureSearch) -> QuerySet[Feature]:
    """The flags the search matches, unordered."""
    flags = Feature.objects.all()
    if search.terms:
        flags = flags.filter(any_term(["name", "description"], search.terms))
    for column, found in (
        ("project_id", search.project),
        ("type", search.type),
        ("created_by_id", search.created_by),
    ):
        if found is not None:
            flags = flags.filter(_in(column, found))
    if search.state is not None:
        flags = flags.filter(_state(search.state))
    if search.tag is not None:
        flags = flags.filter(_tagged(search.tag))
    if search.segment is not None:
        flags = flags.filter(_with_segment(search.segment))
    for column, found in (("created_at", search.created_at), ("last_seen_at", search.last_seen_at)):
        if found is not None:
            day = datetime.fromisoformat(found.values[0]).replace(tzinfo=UTC)
            lookup = "lt" if found.operator == "IS_BEFORE" else "gte"
            flags = flags.filter(**{f"{column}__{lookup}": day})
    if search.status:
        flags = flags.filter(_status(search.status))
    return _lifecycle_and_archived(flags, search.lifecycle, search.archived)


def _ordering(search: FeatureSearch, flags: QuerySet) -> tuple[QuerySet, list[OrderBy]]:
    """Unleash's ranking: the sort key in the asked order, then oldest first, then by name."""
    descending = search.sort_order == "desc"
    then = [F("created_at").asc(), F("name").asc()]
    order: list[OrderBy] = []
    if search.favorites_first:  # `is_favorite`: false throughout for a token
        order.append(F("is_favorite").desc())
    if search.sort_by.startswith("environment:"):
        environment = search.sort_by.split(":", 1)[1]
        enabled = FeatureEnvironment.objects.filter(
            feature=OuterRef("pk"), environment_id=environment
        ).values("enabled")[:1]
        flags = flags.annotate(sort_enabled=Subquery(enabled))
        key = F("sort_enabled")
        order += [key.desc(nulls_last=True) if descending else key.asc(nulls_last=True), *then]
    elif search.sort_by == "lastSeenAt":
        key = F("last_seen_at")
        order += [key.desc(nulls_last=True) if descending else key.asc(nulls_last=True), *then]
    elif search.sort_by in _SORT_COLUMNS:
        key = F(_SORT_COLUMNS[search.sort_by])
        order += [key.desc() if descending else key.asc(), *then]
    else:
        key = F("created_at")
        order += [key.desc() if descending else key.asc(), F("name").asc()]
    return flags, order


def search_features(search: FeatureSearch, *, user: object) -> tuple[list[Feature], int]:
    """The page of matching flags (each with `is_favorite` for `user`) and how many match in
    all. Called inside `read_snapshot(local_settings=INDEX_SCANS)` by a caller that reads the
    page's details (`page_details`) in the same snapshot."""
    flags = matching_flags(search)
    is_user = isinstance(user, User) and user.pk is not None
    if is_user:
        favorites = FavoriteFeature.objects.filter(feature=OuterRef("pk"), user=user)
        flags = flags.annotate(is_favorite=Exists(favorites))
    else:
        flags = flags.annotate(is_favorite=Value(False))
    if search.favorite is not None and len(set(search.favorite.values)) == 1:
        flags = flags.filter(is_favorite=search.favorite.values[0] == "true")
    flags, order = _ordering(search, flags)
    total = flags.order_by().count()
    if total <= search.offset:
        return [], total
    page = list(
        flags.select_related("created_by")
        .order_by(*order)[search.offset : search.offset + search.limit]
        .only(
            "name",
            "type",
            "description",
            "project_id",
            "stale",
            "impression_data",
            "created_at",
            "archived_at",
            "created_by__id",
            "created_by__name",
            "created_by__username",
            "created_by__email",
            "created_by__image_url",
        )
    )
    return page, total


@dataclass
class PageDetails:
    """What a page of the search shows of its flags beyond their own rows, by flag name."""

    environments: dict[str, list[dict[str, Any]]]
    tags: dict[str, list[dict[str, Any]]]
    segments: dict[str, list[str]]
    stages: dict[str, FeatureLifecycleStage]
    parents: set[str]
    children: set[str]


def page_details(names: list[str]) -> PageDetails:
    """What the page shows of its flags beyond their own row: six statements, each bounded by
    the page's names."""
    since = timezone.now() - timedelta(hours=1)
    usage: dict[tuple[str, str], tuple[int, int]] = {
        (row["feature_name"], row["environment"]): (row["yes"], row["no"])
        for row in FeatureUsageBucket.objects.filter(feature_name__in=names, hour__gte=since)
        .values("feature_name", "environment")
        .annotate(yes=Sum("yes"), no=Sum("no"))
        .order_by()
    }
    environments: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    rows = (
        FeatureEnvironment.objects.filter(feature_id__in=names)
        .annotate(
            variant_count=JsonArrayLength("variants"),
            strategy_count=Count("strategies"),
            enabled_strategy_count=Count("strategies", filter=Q(strategies__disabled=False)),
        )
        .values_list(
            "feature_id",
            "environment_id",
            "environment__type",
            "environment__sort_order",
            "enabled",
            "variant_count",
            "last_seen_at",
            "strategy_count",
            "enabled_strategy_count",
        )
        .order_by("environment__sort_order", "environment_id")
    )
    for name, environment, kind, sort_order, enabled, variants, seen, count, on in rows:
        yes, no = usage.get((name, environment), (0, 0))
        environments[name].append(
            {
                "name": environment,
                "enabled": enabled,
                "type": kind,
                "sortOrder": sort_order,
                "variantCount": variants,
                "lastSeenAt": seen,
                "hasStrategies": count > 0,
                "hasEnabledStrategies": on > 0,
                "yes": yes,
                "no": no,
                "changeRequestIds": [],
            }
        )
    tags: dict[str, list[dict[str, Any]]] = {}
    for name, tag_type, value, color in (
        FeatureTag.objects.filter(feature_id__in=names)
        .order_by("id")
        .values_list("feature_id", "tag__type_id", "tag__value", "tag__type__color")
    ):
        tags.setdefault(name, []).append({"value": value, "type": tag_type, "color": color})
    segments: dict[str, list[str]] = {}
    for name, segment in (
        FeatureStrategySegment.objects.filter(strategy__feature_environment__feature_id__in=names)
        .values_list("strategy__feature_environment__feature_id", "segment__name")
        .order_by("segment__name")
        .distinct()
    ):
        segments.setdefault(name, []).append(segment)
    stages: dict[str, FeatureLifecycleStage] = {}
    for stage in FeatureLifecycleStage.objects.filter(feature_id__in=names).order_by(
        "feature_id", "-entered_at", "-id"
    ):
        stages.setdefault(stage.feature_id, stage)
    links = FeatureDependency.objects.filter(Q(child_id__in=names) | Q(parent_id__in=names))
    parents: set[str] = set()
    children: set[str] = set()
    for child, parent in links.values_list("child_id", "parent_id"):
        children.add(child)
        parents.add(parent)
    return PageDetails(environments, tags, segments, stages, parents, children)
