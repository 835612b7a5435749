"""What SDKs report through the client API: usage counts in hourly buckets, last-seen times of
flags, and the instances that registered."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Protocol

from django.conf import settings
from django.db import OperationalError, connection
from django.db.models import Q
from django.utils import timezone

from features.models import (
    ClientInstance,
    Feature,
    FeatureEnvironment,
    FeatureUsageBucket,
    ProjectFlagActivity,
)
from flagadmin.core.caches import BoundedCache
from flagadmin.core.db import atomic_retrying_conflicts, outage_summary
from flagadmin.core.models import ApiToken
from flagadmin.core.sql import column, table

logger = logging.getLogger(__name__)

# What the bucket columns (bigint) hold.
BIGINT_MAX = 2**63 - 1


class ClientInstanceReport(Protocol):
    """An SDK instance as a report names it (`register_client_instances`)."""

    app_name: str
    instance_id: str
    environment: str
    sdk_version: str
    strategies: Sequence[str]
    interval: int | None
    started_at: datetime | None


def _hour_of(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _bucket_upsert_sql(projects: int) -> str:
    """One statement that adds a report's counts to the hourly buckets of the active flags it
    names (in `projects` when `projects` > 0), in name order, and returns those names.

    The report travels as one JSON parameter (a list of {name, yes, no}) rather than three
    placeholders per flag: the statement's text then stays the same for every report, and the
    driver parses it once instead of on every call."""
    b, f = FeatureUsageBucket, Feature
    if connection.vendor == "postgresql":
        reported = (
            "SELECT name, yes, no FROM jsonb_to_recordset(%s::jsonb) "
            "AS r(name text, yes bigint, no bigint)"
        )
    else:
        reported = (
            "SELECT json_extract(value, '$.name') AS name, json_extract(value, '$.yes') AS yes, "
            "json_extract(value, '$.no') AS no FROM json_each(%s)"
        )
    in_projects = (
        f" AND f.{column(f, 'project')} IN ({', '.join(['%s'] * projects)})" if projects else ""
    )
    keys = ", ".join(column(b, k) for k in ("feature_name", "environment", "app_name", "hour"))
    yes, no = column(b, "yes"), column(b, "no")
    # Sums saturate at the bigint columns' maximum rather than fail the report.
    least = "LEAST" if connection.vendor == "postgresql" else "MIN"
    return (
        f"WITH reported AS ({reported}) "
        f"INSERT INTO {table(b)} AS bucket ({keys}, {yes}, {no}) "
        "SELECT reported.name, %s, %s, %s, reported.yes, reported.no "
        f"FROM reported JOIN {table(f)} f ON f.{column(f, 'name')} = reported.name "
        f"WHERE f.{column(f, 'archived_at')} IS NULL{in_projects} "
        "ORDER BY reported.name "
        f"ON CONFLICT ({keys}) DO UPDATE SET {yes} = bucket.{yes} + {least}(EXCLUDED.{yes}, "
        f"{BIGINT_MAX} - bucket.{yes}), "
        f"{no} = bucket.{no} + {least}(EXCLUDED.{no}, {BIGINT_MAX} - bucket.{no}) "
        f"RETURNING {column(b, 'feature_name')}"
    )


# (environment, flag) whose last_seen_at this process wrote less than LAST_SEEN_RESOLUTION
# seconds ago: those it does not write again yet.
MAX_LAST_SEEN_WRITES = 100_000
_last_seen_written: BoundedCache[tuple[str, str], bool] = BoundedCache(
    "last_seen writes",
    max_entries=MAX_LAST_SEEN_WRITES,
    max_age=lambda: settings.LAST_SEEN_RESOLUTION,
)


def forget_last_seen_writes() -> None:
    """Forget which last_seen_at this process wrote lately (the next report writes again
    where the database's own condition lets it)."""
    _last_seen_written.clear()


def record_client_metrics(
    *,
    environment: str,
    app_name: str,
    counts: Mapping[str, tuple[int, int]],
    projects: Sequence[str] | None = None,
) -> None:
    """Record what one SDK report says: per flag, how often it was evaluated to on and off.

    This is the one writer of usage (other code that keeps figures about usage hooks in here).
    It is built for hundreds of reports a second without holding up other writes:

    - counts go into hourly buckets by one statement per report, in autocommit, rows in name
      order (concurrent reports lock shared buckets in the same order and never deadlock); the
      same statement keeps only active flags of `projects` (None or `*`: any project), as an
      SDK may report flags that were archived or that its token does not cover;
    - `last_seen_at` of the flag and of its environment, which `lastReportedFlagUsage` and
      `lastSeenAt` show, is written only when it moves by `LAST_SEEN_RESOLUTION` seconds or
      more: each process skips flags it wrote that recently, and the conditional UPDATE skips
      those another process wrote, so most reports write nothing but their counts.
    """
    now = timezone.now()
    reported = sorted((name, yes, no) for name, (yes, no) in counts.items() if yes or no)
    if not reported:
        return
    scope = [] if projects is None or "*" in projects else sorted(set(projects))
    hour = FeatureUsageBucket._meta.get_field("hour").get_db_prep_save(_hour_of(now), connection)
    rows = json.dumps([{"name": name, "yes": yes, "no": no} for name, yes, no in reported])
    with connection.cursor() as cursor:
        cursor.execute(_bucket_upsert_sql(len(scope)), [rows, environment, app_name, hour, *scope])
        counted = sorted(row[0] for row in cursor.fetchall())
    due = [name for name in counted if _last_seen_written.get((environment, name)) is None]
    if not due:
        return
    stale_before = now - timedelta(seconds=settings.LAST_SEEN_RESOLUTION)
    moved = Q(last_seen_at__isnull=True) | Q(last_seen_at__lt=stale_before)

    try:
        atomic_retrying_conflicts(lambda: _advance_last_seen(environment, due, moved, now))
    except OperationalError as exc:
        # The counts are committed: failing the report now would have the SDK send it again
        # and count it twice. The next report writes last_seen.
        logger.warning("last_seen not written for %d flags: %s", len(due), outage_summary(exc))
        return
    for name in due:
        _last_seen_written.put((environment, name), True)


def _advance_last_seen(environment: str, names: Sequence[str], moved: Q, now: datetime) -> None:
    """Set `last_seen_at` of the flags `names` and of their entries for `environment`, where it
    `moved`. The rows are locked first, in the order in which every writer of several of them
    takes them (see `features.locks`): the flags by name, their
    environment entries by flag, then their projects' activity rows (which a trigger advances
    with each flag) by project; FOR NO KEY UPDATE, as there. Updated in whatever order the
    statements find them, two reports, or a report and a batch archive, could each hold a row
    the other waits for."""
    flags = list(
        Feature.objects.filter(moved, name__in=names)
        .order_by("name")
        .select_for_update(no_key=True)
        .values_list("name", "project_id")
    )
    entries = list(
        FeatureEnvironment.objects.filter(moved, feature_id__in=names, environment_id=environment)
        .order_by("feature_id")
        .select_for_update(no_key=True)
        .values_list("pk", flat=True)
    )
    if flags:
        list(
            ProjectFlagActivity.objects.filter(project_id__in={project for _, project in flags})
            .order_by("project_id")
            .select_for_update(no_key=True)
            .values_list("pk", flat=True)
        )
        Feature.objects.filter(name__in=[name for name, _ in flags]).update(last_seen_at=now)
    if entries:
        FeatureEnvironment.objects.filter(pk__in=entries).update(last_seen_at=now)


def register_client_instance(
    *,
    environment: str,
    app_name: str,
    instance_id: str,
    sdk_version: str = "",
    strategies: Sequence[str] = (),
    interval: int | None = None,
    started_at: datetime | None = None,
) -> None:
    """Remember an SDK instance (what `POST /api/client/register` says), one row per app,
    instance and environment; registering again updates it."""
    ClientInstance.objects.update_or_create(
        app_name=app_name,
        instance_id=instance_id,
        environment=environment,
        defaults={
            "sdk_version": sdk_version,
            "strategies": list(strategies),
            "interval": interval,
            "started_at": started_at,
            "last_seen_at": timezone.now(),
        },
    )


def register_client_instances(instances: Sequence[ClientInstanceReport]) -> None:
    """Remember many SDK instances at once (what Edge forwards in a bulk report), as
    `register_client_instance` remembers one: one upsert for the batch, the last report of an
    instance winning. Rows go in key order, so concurrent batches lock them in one order."""
    now = timezone.now()
    latest = {(i.app_name, i.instance_id, i.environment): i for i in instances}
    rows = [
        ClientInstance(
            app_name=app_name,
            instance_id=instance_id,
            environment=environment,
            sdk_version=report.sdk_version,
            strategies=list(report.strategies),
            interval=report.interval,
            started_at=report.started_at,
            last_seen_at=now,
        )
        for (app_name, instance_id, environment), report in sorted(latest.items())
    ]
    if rows:
        ClientInstance.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["app_name", "instance_id", "environment"],
            update_fields=["sdk_version", "strategies", "interval", "started_at", "last_seen_at"],
        )


def record_seen_tokens(secrets: Sequence[str]) -> None:
    """Record that the API tokens `secrets` were used (Edge reports the tokens its SDKs sent),
    at most every TOKEN_LAST_USED_RESOLUTION seconds, as a request's own token is recorded.
    Unknown secrets change nothing."""
    if not secrets:
        return
    now = timezone.now()
    stale_before = now - timedelta(seconds=settings.TOKEN_LAST_USED_RESOLUTION)
    digests = sorted({ApiToken.digest_of(secret) for secret in secrets})
    ApiToken.objects.filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=stale_before), digest__in=digests
    ).update(last_used_at=now)
