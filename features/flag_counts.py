"""The per-project flag counts (`ProjectFlagCount`) against the flags they count.

The database keeps the counts (triggers of migration 0007); this module recounts them from the
flags, to check them (tests) and to repair them (`manage.py repairflagcounts`), for example
after rows were changed with the triggers disabled (a restore with `session_replication_role`
= replica, a hand-made `ALTER TABLE ... DISABLE TRIGGER`).
"""

from __future__ import annotations

from django.db import connection, transaction
from django.db.models import Count

from features.models import Feature, ProjectFlagCount

CountKey = tuple[str, str, bool]  # (project id, flag type, stale)


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


def repair() -> dict[CountKey, tuple[int, int]]:
    """Make the stored counts equal to a recount; returns the counts that were wrong, as
    (stored, recounted). Writers of flags wait meanwhile (PostgreSQL: a SHARE lock on the
    flags; SQLite: the write lock), so that no write falls between the recount and the fix."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                table = connection.ops.quote_name(Feature._meta.db_table)
                cursor.execute(f"LOCK TABLE {table} IN SHARE MODE")
        actual, kept = recounted(), stored()
        wrong = {
            key: (kept.get(key, 0), actual.get(key, 0))
            for key in actual.keys() | kept.keys()
            if kept.get(key, 0) != actual.get(key, 0)
        }
        for (project, kind, stale), (_, total) in wrong.items():
            ProjectFlagCount.objects.update_or_create(
                project_id=project, type=kind, stale=stale, defaults={"total": total}
            )
        ProjectFlagCount.objects.filter(total=0).delete()
    return wrong
