"""Reading flags: a fixed number of queries per flag, whatever its number of environments,
strategies or tags, and whatever the number of flags in the instance."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import (
    Count,
    Exists,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
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
from flagadmin.models import AuditEvent

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


def list_project_features(*, project_id: str, user: object) -> list[Feature]:
    """The project's active flags, oldest first, each with its tags and its environments (with
    their strategy counts): four queries whatever the number of flags."""
    queryset = Feature.objects.filter(project_id=project_id, archived_at__isnull=True)
    if isinstance(user, User) and user.pk is not None:
        favorites = FavoriteFeature.objects.filter(feature=OuterRef("pk"), user=user)
        queryset = queryset.annotate(is_favorite=Exists(favorites))
    environments = (
        FeatureEnvironment.objects.select_related("environment")
        .annotate(
            strategy_count=Count("strategies"),
            enabled_strategy_count=Count("strategies", filter=Q(strategies__disabled=False)),
        )
        .order_by("environment__sort_order", "environment__name")
    )
    features = list(
        queryset.order_by("created_at", "name").prefetch_related(
            Prefetch("environments", queryset=environments, to_attr="environment_list"),
            Prefetch(
                "feature_tags",
                queryset=FeatureTag.objects.select_related("tag").order_by("id"),
                to_attr="tag_links",
            ),
        )
    )
    for feature in features:
        if not hasattr(feature, "is_favorite"):
            feature.is_favorite = False
        feature.tag_list = [
            {"type": link.tag.type_id, "value": link.tag.value} for link in feature.tag_links
        ]
    return features
