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
from flagadmin.api.errors import NotFoundError
from flagadmin.models import AuditEvent
from projects.models import Project

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


def _not_in_project(name: str, project_id: str, found: Feature | None) -> NotFoundError:
    elsewhere = (
        "."
        if found is None
        else f', but there\'s a feature with that name in project "{found.project_id}"'
    )
    return NotFoundError(f'There\'s no feature named "{name}" in project "{project_id}"{elsewhere}')


def get_project_feature(*, project_id: str, name: str) -> Feature:
    """The flag `name` of project `project_id`, archived or not (404 otherwise)."""
    feature = Feature.objects.filter(name=name).first()
    if feature is None or feature.project_id != project_id:
        raise _not_in_project(name, project_id, feature)
    return feature


def load_feature_detail(*, project_id: str, name: str, user: object) -> Feature:
    """The flag `name` of project `project_id` with everything `featureSchema` shows.

    404 when there is no such flag, when it belongs to another project, or when it is archived
    (as Unleash: archived flags are read through the archive, not here).
    """
    queryset = Feature.objects.select_related("created_by")
    if isinstance(user, User) and user.pk is not None:
        favorites = FavoriteFeature.objects.filter(feature=OuterRef("pk"), user=user)
        queryset = queryset.annotate(is_favorite=Exists(favorites))
    feature = queryset.filter(name=name).first()
    if feature is None or feature.project_id != project_id:
        raise _not_in_project(name, project_id, feature)
    if feature.archived_at is not None:
        raise NotFoundError(f"Could not find feature toggle with name {name}")
    if not hasattr(feature, "is_favorite"):
        feature.is_favorite = False
    prefetch_related_objects([feature], *DETAIL_PREFETCHES)
    feature.tag_list = [
        {"type": link.tag.type_id, "value": link.tag.value} for link in feature.tag_links
    ]
    feature.current_stage = feature.stage_list[0] if feature.stage_list else None
    feature.child_names = [link.child_id for link in feature.dependent_links]
    feature.collaborator_list = feature_collaborators(name)
    return feature


def get_project(project_id: str) -> Project:
    """The project, archived or not (404 otherwise)."""
    project = Project.objects.filter(pk=project_id).only("id", "default_stickiness").first()
    if project is None:
        raise NotFoundError(f"Project with id {project_id} does not exist")
    return project


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
