"""The per-project figures the database keeps (`ProjectFlagCount`, `ProjectFlagDay`,
`ProjectFlagActivity`) against the rows they summarise.

The triggers declared in `flagadmin.core.derived` keep them; this module recomputes them from the
flags and the audit events, to check them (tests, the benchmark) and to repair them
(`manage.py repairprojectstats`), for example after rows were written with the triggers off (a
restore with `session_replication_role = replica`, an `ALTER TABLE ... DISABLE TRIGGER`).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, Max, OuterRef, Subquery
from django.db.models.functions import TruncDate

from features.models import Feature, ProjectFlagActivity, ProjectFlagCount, ProjectFlagDay
from flagadmin.core.models import AuditEvent
from flagadmin.core.recount import differing
from flagadmin.core.sql import lock_tables_against_writes
from projects.models import Project

CountKey = tuple[str, str, bool]  # (project id, flag type, stale)
DayKey = tuple[str, str, date]  # (project id, flag type, day of creation in UTC)
Activity = tuple[datetime | None, datetime | None]  # (last flag event, last flag usage)


def recounted() -> dict[CountKey, int]:
    """The counts as the flags give them: flags that are not archived, by project, type and
    stale state."""
    rows = (
        Feature.objects.filter(archived_at__isnull=True)
        .order_by()
        .values_list("project_id", "type", "stale")
        .annotate(total=Count("pk"))
    )
    return {(project, kind, stale): total for project, kind, stale, total in rows}


def stored() -> dict[CountKey, int]:
    """The counts as stored, without the zeros (a count row stays when its flags go)."""
    rows = ProjectFlagCount.objects.exclude(total=0).values_list(
        "project_id", "type", "stale", "total"
    )
    return {(project, kind, stale): total for project, kind, stale, total in rows}


def recounted_days() -> dict[DayKey, int]:
    """The flags that are neither archived nor stale, by project, type and day of creation
    (UTC)."""
    rows = (
        Feature.objects.filter(archived_at__isnull=True, stale=False)
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .order_by()
        .values_list("project_id", "type", "day")
        .annotate(total=Count("pk"))
    )
    return {(project, kind, day): total for project, kind, day, total in rows}


def stored_days() -> dict[DayKey, int]:
    """The day counts as stored, without the zeros."""
    rows = ProjectFlagDay.objects.exclude(total=0).values_list("project_id", "type", "day", "total")
    return {(project, kind, day): total for project, kind, day, total in rows}


def recomputed_activity() -> dict[str, Activity]:
    """Each project's newest event about one of its flags and newest usage of its flags, from
    the rows (projects with neither left out)."""
    flag_in_project = Feature.objects.filter(
        name=OuterRef("feature_name"), project=OuterRef("project")
    )
    newest_event = (
        AuditEvent.objects.filter(project=OuterRef("pk"), feature_name__isnull=False)
        .filter(Exists(flag_in_project))
        .order_by("-created_at")
        .values("created_at")[:1]
    )
    rows = Project.objects.annotate(
        event_at=Subquery(newest_event), seen_at=Max("features__last_seen_at")
    ).values_list("pk", "event_at", "seen_at")
    return {pk: (event, seen) for pk, event, seen in rows if event or seen}


def stored_activity() -> dict[str, Activity]:
    """The stored times, projects with neither left out."""
    rows = ProjectFlagActivity.objects.values_list(
        "project_id", "last_flag_event_at", "last_flag_seen_at"
    )
    return {pk: (event, seen) for pk, event, seen in rows if event or seen}


def _fix_totals(
    model: type[ProjectFlagCount] | type[ProjectFlagDay],
    key_fields: tuple[str, str, str],
    actual: dict[Any, int],
    kept: dict[Any, int],
) -> dict[Any, tuple[int, int]]:
    """Stores the recounted totals of `model` (rows keyed by `key_fields`) that differ from the
    kept ones and deletes the rows left at zero; returns the differences as (kept, actual)."""
    wrong = differing(actual, kept)
    for key, (_, total) in wrong.items():
        model.objects.update_or_create(
            **dict(zip(key_fields, key, strict=True)), defaults={"total": total}
        )
    model.objects.filter(total=0).delete()
    return wrong


def repair() -> tuple[
    dict[CountKey, tuple[int, int]],
    dict[DayKey, tuple[int, int]],
    dict[str, tuple[Activity, Activity]],
]:
    """Make the stored figures equal to a recomputation; returns those that were wrong, as
    (stored, recomputed): counts, day counts, times. Writers of flags and events wait
    meanwhile (PostgreSQL: SHARE locks; SQLite: the write lock), so that no write falls
    between the recomputation and the fix."""
    with transaction.atomic():
        lock_tables_against_writes(Feature, AuditEvent)
        wrong_counts = _fix_totals(
            ProjectFlagCount, ("project_id", "type", "stale"), recounted(), stored()
        )
        wrong_days = _fix_totals(
            ProjectFlagDay, ("project_id", "type", "day"), recounted_days(), stored_days()
        )

        nothing: Activity = (None, None)
        actual_times, kept_times = recomputed_activity(), stored_activity()
        wrong_times = {
            pk: (kept_times.get(pk, nothing), actual_times.get(pk, nothing))
            for pk in actual_times.keys() | kept_times.keys()
            if kept_times.get(pk, nothing) != actual_times.get(pk, nothing)
        }
        for pk, (_, (event_at, seen_at)) in wrong_times.items():
            ProjectFlagActivity.objects.update_or_create(
                project_id=pk,
                defaults={"last_flag_event_at": event_at, "last_flag_seen_at": seen_at},
            )
    return wrong_counts, wrong_days, wrong_times
