"""Segments: reusable lists of constraints that strategies name by id, with Unleash 8.2's rules
(its segment service) in its order: the limit of segments, the values per segment, the name
(not empty, free), the project (a project's segment only for that project's strategies).
Each write is one transaction that also records Unleash's event (`segment-created`,
`segment-updated`, `segment-deleted`); the event also moves the client payload's key, so the
change reaches SDKs (strategies carry their segments' constraints inlined)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet

from features.limits import check_segment_count, segment_values_problem
from features.models import FeatureStrategy, FeatureStrategySegment, Segment
from flagadmin.core.actors import Actor, audit_identity
from flagadmin.core.audit import record_event
from flagadmin.core.db import unique_or_conflict
from flagadmin.core.errors import (
    InUseError,
    InvalidInputError,
    NameExistsError,
    NotFoundError,
    Problem,
)
from flagadmin.core.times import api_timestamp
from projects.models import Project

SEGMENT_CREATED = "segment-created"
SEGMENT_UPDATED = "segment-updated"
SEGMENT_DELETED = "segment-deleted"

NAME_EXISTS = "Segment name already exists"
NAME_EMPTY = "Segment name cannot be empty"

# Segment creations take this PostgreSQL advisory lock, so two of them cannot both see room
# under the limit (SQLite's IMMEDIATE transactions already serialise writers).
SEGMENT_CREATE_LOCK_KEY = 7202611230027


def not_found(segment_id: object) -> NotFoundError:
    return NotFoundError(f'No segment exists with ID "{segment_id}"')


def segment_data(segment: Segment) -> dict[str, Any]:
    """A segment as Unleash's store maps it (`project` only when it has one): the body of a
    single segment, and the data of its events."""
    data: dict[str, Any] = {
        "id": segment.pk,
        "name": segment.name,
        "description": segment.description,
    }
    if segment.project_id:
        data["project"] = segment.project_id
    data["constraints"] = segment.constraints
    data["createdBy"] = segment.created_by
    data["createdAt"] = api_timestamp(segment.created_at)
    return data


def segments_with_usage() -> QuerySet[Segment]:
    """Every segment by name, with how many flags and projects use it (`used_in_features`,
    `used_in_projects`): strategies of archived flags are not counted, as Unleash does not
    count them. One query."""
    active = Q(strategy_links__strategy__feature_environment__feature__archived_at__isnull=True)
    feature = "strategy_links__strategy__feature_environment__feature"
    return Segment.objects.annotate(
        used_in_features=Count(f"{feature}__name", filter=active, distinct=True),
        used_in_projects=Count(f"{feature}__project_id", filter=active, distinct=True),
    ).order_by("name", "id")


def strategies_using(segment: Segment) -> QuerySet[FeatureStrategy]:
    """The strategies of active flags that use `segment`."""
    return (
        FeatureStrategy.objects.filter(
            segment_links__segment=segment,
            feature_environment__feature__archived_at__isnull=True,
        )
        .select_related("feature_environment__feature")
        .order_by("feature_environment__feature__name", "sort_order", "created_at")
    )


def check_name_free(name: str, *, excluding: int | None = None) -> None:
    """Unleash's `validateName`: an empty name is 400, a taken one 409."""
    if not name:
        raise InvalidInputError.at(["name"], NAME_EMPTY)
    taken = Segment.objects.filter(name=name)
    if excluding is not None:
        taken = taken.exclude(pk=excluding)
    if taken.exists():
        raise NameExistsError(NAME_EXISTS)


def _name_taken(name: str) -> NameExistsError | None:
    return NameExistsError(NAME_EXISTS) if Segment.objects.filter(name=name).exists() else None


def _check_values(constraints: list[dict]) -> None:
    if problem := segment_values_problem(constraints):
        raise InvalidInputError.at(["constraints"], problem)


def _check_project_exists(project_id: str | None) -> None:
    # Unleash answers 500 (its foreign key fails in SQL); the body is what is wrong.
    if project_id and not Project.objects.filter(pk=project_id).exists():
        raise InvalidInputError(Problem.of(["project"], f'names no project: "{project_id}"'))


def create_segment(
    *,
    name: str,
    description: str | None,
    project_id: str | None,
    constraints: list[dict],
    actor: Actor,
) -> Segment:
    """Create a segment (`segment-created`). Refused as Unleash refuses it, in its order: the
    limit of segments (400 `ExceedsLimitError`), the values in all, an empty or taken name
    (409 `NameExistsError`); and a project that does not exist (400)."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [SEGMENT_CREATE_LOCK_KEY])
        check_segment_count(Segment.objects.count())
        _check_values(constraints)
        check_name_free(name)
        _check_project_exists(project_id)
        with unique_or_conflict(lambda: _name_taken(name)):
            segment = Segment.objects.create(
                name=name,
                description=description,
                project_id=project_id or None,
                constraints=constraints,
                created_by=audit_identity(actor).name,
            )
        record_event(
            SEGMENT_CREATED, actor=actor, project=segment.project_id, data=segment_data(segment)
        )
    return segment


def update_segment(
    *,
    segment_id: int | None,
    name: str,
    description: str | None,
    project_id: str | None,
    constraints: list[dict],
    actor: Actor,
    keep_description: bool = False,
) -> Segment:
    """Replace a segment's name, project and constraints (`segment-updated`); its description
    only when `keep_description` is False (Unleash leaves a description that is not sent as it
    was, and a project that is not sent becomes none). Refused as Unleash refuses it, in its
    order: the values in all, no such segment (404), a taken name (409), a project other
    than the one every strategy using it belongs to (400)."""
    with transaction.atomic():
        _check_values(constraints)
        segment = _locked(segment_id)
        if segment.name != name:
            check_name_free(name, excluding=segment.pk)
        _check_project_exists(project_id)
        if project_id:
            check_used_only_in(segment, project_id)
        before = segment_data(segment)
        segment.name = name
        if not keep_description:
            segment.description = description
        segment.project_id = project_id or None
        segment.constraints = constraints
        with unique_or_conflict(lambda: _name_taken(name)):
            segment.save(update_fields=["name", "description", "project", "constraints"])
        record_event(
            SEGMENT_UPDATED,
            actor=actor,
            project=segment.project_id,
            data=segment_data(segment),
            pre_data=before,
        )
    return segment


def delete_segment(*, segment_id: int | None, actor: Actor) -> None:
    """Delete a segment (`segment-deleted`). While a strategy of an active flag uses it, 409
    (`InUseError`: Unleash's `SegmentInUseError`); strategies of archived flags lose it, as in
    Unleash (its foreign key cascades). No such segment: 404."""
    with transaction.atomic():
        segment = _locked(segment_id)
        if strategies_using(segment).exists():
            raise InUseError(
                f'Segment "{segment.name}" is in use by strategies of active flags; remove it '
                "from them first."
            )
        before = segment_data(segment)
        FeatureStrategySegment.objects.filter(segment=segment).delete()
        project_id = segment.project_id
        segment.delete()
        record_event(SEGMENT_DELETED, actor=actor, project=project_id, pre_data=before)


def _locked(segment_id: int | None) -> Segment:
    """The segment, locked until the transaction ends (a strategy that would start using it
    meanwhile waits: its link's foreign key check locks the segment's row)."""
    segment = None
    if segment_id is not None:
        segment = Segment.objects.select_for_update().filter(pk=segment_id).first()
    if segment is None:
        raise not_found(segment_id)
    return segment


def check_used_only_in(segment: Segment, project_id: str) -> None:
    """Unleash's `validateSegmentProject`: a segment given to a project must not be used by
    strategies of other projects."""
    used = sorted(
        set(
            strategies_using(segment).values_list(
                "feature_environment__feature__project_id", flat=True
            )
        )
    )
    if len(used) > 1 or (len(used) == 1 and used[0] != project_id):
        message = (
            "Invalid project. Segment is being used by strategies in other projects: "
            + ", ".join(used)
        )
        raise InvalidInputError.at(["project"], message)


def project_segments_problem(project_id: str, segment_ids: Sequence[int]) -> str | None:
    """Unleash's `validateProjectCanAccessSegments`: the segments among `segment_ids` that
    belong to another project, in its sentence, or None."""
    foreign = list(
        Segment.objects.filter(pk__in=segment_ids)
        .exclude(project__isnull=True)
        .exclude(project_id=project_id)
        .order_by("id")
        .values_list("name", "id")
    )
    if not foreign:
        return None
    names = ",".join(f"{name} with id {segment_id}" for name, segment_id in foreign)
    return f'The segments {names} does not belong to project "{project_id}"'
