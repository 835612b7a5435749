"""A flag's dependencies on parent flags, with Unleash 8.2's rules (its dependent-features
service): one level deep, an active parent, both flags in one project. Each function is one
transaction that also writes its audit event (Unleash's names)."""

from __future__ import annotations

from django.db import transaction

from features.locks import lock_flags
from features.models import Feature, FeatureDependency
from flagadmin.core.actors import Actor
from flagadmin.core.audit import record_event
from flagadmin.core.errors import InvalidOperationError, NotFoundError

FEATURE_DEPENDENCY_ADDED = "feature-dependency-added"
FEATURE_DEPENDENCY_REMOVED = "feature-dependency-removed"
FEATURE_DEPENDENCIES_REMOVED = "feature-dependencies-removed"

SELF_DEPENDENCY = "A feature flag cannot depend on itself."
CHILD_IS_PARENT = (
    "Transitive dependency detected. Cannot add a dependency to the feature that other "
    "features depend on."
)
PARENT_IS_CHILD = (
    "Transitive dependency detected. Cannot add a dependency to the feature that has parent "
    "dependency."
)


def dependency_problem(
    *, child_name: str, parent_name: str, project_id: str
) -> InvalidOperationError | NotFoundError | None:
    """Why the flag `child_name` of project `project_id` cannot depend on `parent_name`, as
    Unleash refuses it and in its order, or None: itself; a child that is a parent already, or
    a parent that is a child (one level deep); no active flag of that name (an archived
    parent could never be deleted, nor its dependents turned on); not both in the project."""
    if child_name == parent_name:
        return InvalidOperationError(SELF_DEPENDENCY)
    if FeatureDependency.objects.filter(parent_id=child_name).exists():
        return InvalidOperationError(CHILD_IS_PARENT)
    if FeatureDependency.objects.filter(child_id=parent_name).exists():
        return InvalidOperationError(PARENT_IS_CHILD)
    if not Feature.objects.filter(name=parent_name, archived_at__isnull=True).exists():
        return InvalidOperationError(f"No active feature {parent_name} exists")
    in_project = Feature.objects.filter(name__in=[child_name, parent_name], project_id=project_id)
    if in_project.count() != 2:
        return NotFoundError(
            "Cannot add the dependency. Both the parent and the child feature must belong to "
            f'project "{project_id}".'
        )
    return None


def add_feature_dependency(
    *,
    project_id: str,
    child_name: str,
    parent_name: str,
    enabled: bool = True,
    variants: list[str] | None = None,
    actor: Actor,
) -> None:
    """Make the flag `child_name` depend on `parent_name` (or change how), recording
    `feature-dependency-added`. A parent that `dependency_problem` refuses raises its error,
    checked under both flags' locks (an archive of the parent committed meanwhile is seen).
    With `enabled` false the variants are dropped, as Unleash drops them."""
    with transaction.atomic():
        lock_flags([child_name, parent_name])
        problem = dependency_problem(
            child_name=child_name, parent_name=parent_name, project_id=project_id
        )
        if problem is not None:
            raise problem
        stored = list(variants or []) if enabled else []
        FeatureDependency.objects.update_or_create(
            child_id=child_name,
            parent_id=parent_name,
            defaults={"enabled": enabled, "variants": stored},
        )
        data: dict = {"feature": parent_name, "enabled": enabled}
        if variants is not None:
            data["variants"] = variants
        record_event(
            FEATURE_DEPENDENCY_ADDED,
            actor=actor,
            project=project_id,
            feature_name=child_name,
            data=data,
        )


def set_feature_dependency(
    *, child: Feature, parent: Feature, enabled: bool, variants: list, actor: Actor
) -> None:
    """`add_feature_dependency` for flags at hand (the Django admin's dependency rows)."""
    add_feature_dependency(
        project_id=child.project_id,
        child_name=child.name,
        parent_name=parent.name,
        enabled=enabled,
        variants=variants,
        actor=actor,
    )


def remove_feature_dependency(*, child: Feature, parent: Feature, actor: Actor) -> bool:
    """`child` no longer depends on `parent` (`feature-dependency-removed`); whether it did."""
    return remove_feature_dependency_by_name(
        project_id=child.project_id, child_name=child.name, parent_name=parent.name, actor=actor
    )


def remove_feature_dependency_by_name(
    *, project_id: str, child_name: str, parent_name: str, actor: Actor
) -> bool:
    """The flag `child_name` of `project_id` no longer depends on `parent_name`
    (`feature-dependency-removed`); False when it did not."""
    with transaction.atomic():
        deleted, _ = FeatureDependency.objects.filter(
            child_id=child_name, child__project_id=project_id, parent_id=parent_name
        ).delete()
        if deleted:
            record_event(
                FEATURE_DEPENDENCY_REMOVED,
                actor=actor,
                project=project_id,
                feature_name=child_name,
                data={"feature": parent_name},
            )
    return bool(deleted)


def remove_feature_dependencies(*, project_id: str, child_name: str, actor: Actor) -> bool:
    """The flag `child_name` of `project_id` depends on no flag any more
    (`feature-dependencies-removed`); False when it depended on none."""
    with transaction.atomic():
        deleted, _ = FeatureDependency.objects.filter(
            child_id=child_name, child__project_id=project_id
        ).delete()
        if deleted:
            record_event(
                FEATURE_DEPENDENCIES_REMOVED,
                actor=actor,
                project=project_id,
                feature_name=child_name,
            )
    return bool(deleted)
