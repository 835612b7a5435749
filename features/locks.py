"""The lock order of flag writers, as the functions that take it: every write of flag rows locks
them through these, in this order, so that concurrent writers neither deadlock nor fail a
foreign key at commit (docs/lock-order.md):

1. the flags, by name (`lock_flags`, `lock_named_flags`, `lock_flag_for_edit`);
2. their environment entries (`lock_flag_rows`; one flag environment: `lock_flag_environment`),
   then that environment's strategies (`lock_strategy`);
3. their dependencies;
4. the project's kept counts, 5. its day counts, 6. its activity row (`lock_flag_rows`).

The locks are FOR NO KEY UPDATE, as an UPDATE of the row takes them, so that other
transactions' foreign-key checks (key-share locks, which Django defers to commit) still pass.
SQLite takes its write lock when a transaction begins, and locks no rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC

from django.db import connection
from django.db.models import Q

from features.models import (
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureStrategy,
    FeatureType,
    ProjectFlagActivity,
    ProjectFlagCount,
    ProjectFlagDay,
)
from flagadmin.core.errors import NotFoundError


def lock_flags(names: Iterable[str]) -> dict[str, Feature]:
    """The named flags that exist, locked, by name (first in the order)."""
    found = Feature.objects.filter(name__in=set(names)).order_by("name")
    return {feature.name: feature for feature in found.select_for_update(no_key=True)}


def lock_named_flags(project_id: str, names: Sequence[str]) -> dict[str, Feature]:
    """The named flags that exist, in any project, by name, locked with the rows their writes
    in `project_id` change (see `lock_flag_rows`), for a writer of several flags that checks
    them itself."""
    found = lock_flags(names)
    lock_flag_rows(project_id, [f for f in found.values() if f.project_id == project_id])
    return found


def lock_flag_rows(
    project_id: str, flags: Sequence[Feature], *, types: Iterable[str] | None = None
) -> None:
    """Lock the rows that writes of `flags` (locked already, by name) change, in the one order
    in which every writer of several flags takes them, and each writer of one flag takes its
    part: the flags by name, their environment entries, their dependencies, the project's
    kept counts, day counts, then its activity row (which the triggers and the audit events
    advance last). Written one by one, the flags of a batch would take those rows in the
    order of their names: a batch would hold the activity row after its first flag while
    another writer, holding the count of a later flag's type or an entry of a later flag,
    waits for it (a deadlock, which PostgreSQL ends after a second by aborting one of them).

    FOR NO KEY UPDATE, as the UPDATE of a row itself locks it: FOR UPDATE would also block
    the key-share locks of other transactions' foreign keys to these rows, which Django
    checks at commit, after those transactions' audit events took the activity row. SQLite
    takes its write lock when the transaction begins, and locks no rows.

    `types`: the flag types whose counts and day counts to lock (default: the flags' own; a
    writer that may change a flag's type passes them all)."""
    if not flags or not connection.features.has_select_for_update:
        return
    types = set(types) if types is not None else {flag.type for flag in flags}
    days = {flag.created_at.astimezone(UTC).date() for flag in flags}
    for rows in (
        FeatureEnvironment.objects.filter(feature__in=flags).order_by(
            "feature_id", "environment_id"
        ),
        FeatureDependency.objects.filter(Q(child__in=flags) | Q(parent__in=flags)).order_by(
            "child_id", "parent_id"
        ),
        ProjectFlagCount.objects.filter(project_id=project_id, type__in=types).order_by(
            "type", "stale"
        ),
        ProjectFlagDay.objects.filter(project_id=project_id, type__in=types, day__in=days).order_by(
            "type", "day"
        ),
        ProjectFlagActivity.objects.filter(project_id=project_id),
    ):
        list(rows.select_for_update(no_key=True).values_list("pk", flat=True))


def lock_flag_for_edit(feature: Feature, parents: Iterable[str] = ()) -> None:
    """Lock `feature` and every row that changing its parts may write, in the one order of
    `lock_flag_rows` (its counts and day counts of every type, as its type may change), for a
    caller that changes several parts of one flag in its own transaction: the Django admin's
    flag page saves the metadata, then the environments, tags and dependencies. Without it,
    the metadata's audit event would take the project's activity row before the environment
    entries, the reverse of every other writer. `parents`: the flags the page makes it depend
    on, locked with it, by name, before any other row (`features.dependency_services` locks them
    later; an archive of one of them, holding it and waiting for the project's counts, would
    otherwise deadlock with the page). Nothing to lock for a flag deleted meanwhile (the save
    then finds it missing)."""
    flags = (
        Feature.objects.select_for_update(no_key=True)
        .filter(pk__in={feature.pk, *parents})
        .order_by("name")
    )
    locked = next((flag for flag in flags if flag.pk == feature.pk), None)
    if locked is not None:
        lock_flag_rows(locked.project_id, [locked], types=FeatureType.values)


class FeatureEnvironmentNotFound(NotFoundError, FeatureEnvironment.DoesNotExist):
    """The flag has no entry for that environment: 404 through the API, and the model's own
    DoesNotExist for callers such as the Django admin's bulk actions."""


def lock_flag_environment(feature: Feature, environment: str) -> FeatureEnvironment:
    """The flag's entry for `environment`, locked until the transaction ends (404 when the
    flag has no entry there: the environment is unknown or not enabled in its project)."""
    # Ordered by id, not by the model's ordering (the environment's sort order): that join
    # would lock the environment's row too, which every creation of a flag needs (its
    # foreign keys), making one environment's writers wait on each other and deadlock. NO
    # KEY, as an UPDATE of the entry locks it: the strategies' foreign keys to the entry
    # still get their key-share locks (see `lock_flag_rows`).
    found = (
        FeatureEnvironment.objects.filter(feature=feature, environment_id=environment)
        .order_by("pk")
        .select_for_update(of=("self",), no_key=True)
        .first()
    )
    if found is None:
        raise FeatureEnvironmentNotFound(
            f'Environment "{environment}" is not enabled in project "{feature.project_id}" '
            f'for flag "{feature.name}"'
        )
    found.feature = feature
    return found


def lock_strategy(strategy: FeatureStrategy) -> FeatureStrategy:
    """The strategy's row again, locked for the caller's transaction, with `segment_ids`; 404
    when it was deleted since the view found it."""
    locked = (
        FeatureStrategy.objects.select_for_update(of=("self",))
        .filter(pk=strategy.pk)
        .prefetch_related("segment_links")
        .first()
    )
    if locked is None:
        raise NotFoundError(f"Could not find strategy with id {strategy.pk}")
    locked.segment_ids = [link.segment_id for link in locked.segment_links.all()]
    return locked
