"""Reading flags: a fixed number of queries per flag, whatever its number of environments,
strategies or tags, and whatever the number of flags in the instance."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import connection
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
from flagadmin.api.principals import acting_user_id
from flagadmin.models import AuditEvent
from flagadmin.sql import column, table
from projects.models import Environment, Project, ProjectEnvironment

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


# The creation path is the busiest write, and compiling ORM queries is most of its CPU time
# (select_related over three tables costs ten times the round trip). The reads it makes are
# therefore written out once here, from the models' own table and column names; the rows become
# model instances through `from_db`, with the columns not read deferred as `.only()` would.
PROJECT_FIELDS = ("id", "name")
ENVIRONMENT_FIELDS = ("name", "type", "sort_order")
USER_FIELDS = ("id", "name", "username", "email", "image_url")
ACTIVE_PROJECT_SQL = (
    "SELECT "
    + ", ".join(f"p.{column(Project, f)}" for f in PROJECT_FIELDS)
    + ", "
    + ", ".join(f"e.{column(Environment, f)}" for f in ENVIRONMENT_FIELDS)
    + ", "
    + ", ".join(f"u.{column(User, f)}" for f in USER_FIELDS)
    + f" FROM {table(Project)} p"
    # The creator that a token principal acts as (or no row when the parameter is NULL).
    + f" LEFT JOIN {table(User)} u ON u.{column(User, 'id')} = %s"
    + f" LEFT JOIN {table(ProjectEnvironment)} pe"
    + f" ON pe.{column(ProjectEnvironment, 'project')} = p.{column(Project, 'id')}"
    + f" LEFT JOIN {table(Environment)} e"
    + f" ON e.{column(Environment, 'name')} = pe.{column(ProjectEnvironment, 'environment')}"
    + f" WHERE p.{column(Project, 'id')} = %s AND p.{column(Project, 'archived_at')} IS NULL"
)
USER_SQL = (
    "SELECT "
    + ", ".join(column(User, f) for f in USER_FIELDS)
    + f" FROM {table(User)} WHERE {column(User, 'id')} = %s"
)


def get_active_project(project_id: str, *, for_actor: object = None) -> Project:
    """The project, unless it does not exist or is archived (404 either way). Only its id and
    name are loaded, and, in the same query, what creating a flag in it needs:

    - `new_flag_environments`: the environments enabled in it, in display order (a new flag
      gets one entry each);
    - `preloaded_users`: when `for_actor` is a token that acts as a system user rather than a
      user, that user (the creator a new flag names), by id.
    """
    acts_as_system_user = for_actor is not None and not isinstance(for_actor, User)
    creator_id = acting_user_id(for_actor) if acts_as_system_user else None
    with connection.cursor() as cursor:
        cursor.execute(ACTIVE_PROJECT_SQL, [creator_id, project_id])
        rows = cursor.fetchall()
    if not rows:
        raise NotFoundError(f"Active project with id {project_id} does not exist")
    env_at = len(PROJECT_FIELDS)
    user_at = env_at + len(ENVIRONMENT_FIELDS)
    project = Project.from_db(connection.alias, PROJECT_FIELDS, rows[0][:env_at])
    environments = [
        Environment.from_db(connection.alias, ENVIRONMENT_FIELDS, row[env_at:user_at])
        for row in rows
        if row[env_at] is not None  # the LEFT JOIN's row of a project without environments
    ]
    environments.sort(key=lambda env: (env.sort_order, env.name))
    project.new_flag_environments = environments
    project.preloaded_users = {}
    if creator_id is not None:
        found = rows[0][user_at] is not None
        project.preloaded_users[creator_id] = (
            User.from_db(connection.alias, USER_FIELDS, rows[0][user_at:]) if found else None
        )
    return project


def get_user_summary(user_id: int | None) -> User | None:
    """The user's id, name, username, email and image (what flags show of their creator)."""
    if user_id is None:
        return None
    with connection.cursor() as cursor:
        cursor.execute(USER_SQL, [user_id])
        row = cursor.fetchone()
    return User.from_db(connection.alias, USER_FIELDS, row) if row else None


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
