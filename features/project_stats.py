"""The per-project figures the database keeps (`ProjectFlagCount`, `ProjectFlagActivity`)
against the rows they summarise.

The triggers of migrations 0007 and 0008 keep them; this module recomputes them from the flags
and the audit events, to check them (tests, the benchmark) and to repair them
(`manage.py repairprojectstats`), for example after rows were written with the triggers off (a
restore with `session_replication_role = replica`, an `ALTER TABLE ... DISABLE TRIGGER`).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Count, Exists, Max, OuterRef, Subquery

from features.models import Feature, ProjectFlagActivity, ProjectFlagCount
from flagadmin.models import AuditEvent
from flagadmin.sql import lock_tables_against_writes
from projects.models import Project

CountKey = tuple[str, str, bool]  # (project id, flag type, stale)
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


def repair() -> tuple[dict[CountKey, tuple[int, int]], dict[str, tuple[Activity, Activity]]]:
    """Make the stored figures equal to a recomputation; returns those that were wrong, as
    (stored, recomputed). Writers of flags and events wait meanwhile (PostgreSQL: SHARE locks;
    SQLite: the write lock), so that no write falls between the recomputation and the fix."""
    with transaction.atomic():
        lock_tables_against_writes(Feature, AuditEvent)
        actual, kept = recounted(), stored()
        wrong_counts = {
            key: (kept.get(key, 0), actual.get(key, 0))
            for key in actual.keys() | kept.keys()
            if kept.get(key, 0) != actual.get(key, 0)
        }
        for (project, kind, stale), (_, total) in wrong_counts.items():
            ProjectFlagCount.objects.update_or_create(
                project_id=project, type=kind, stale=stale, defaults={"total": total}
            )
        ProjectFlagCount.objects.filter(total=0).delete()

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
    return wrong_counts, wrong_times
