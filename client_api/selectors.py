"""What SDKs receive from GET /api/client/features: built from one snapshot, kept by each
worker, rebuilt by one request at a time. Design and measurements: docs/client-payload.md.

- One snapshot (`flagadmin.core.db.read_snapshot`): the flags, their strategies and the revision
  the body is keyed by (the newest audit event's id: every flag change records one) are read
  together, so no SDK gets a state that was never committed.
- Versions only move forward: a kept body is replaced only by one of the same revision or a
  newer one. A body is current while the revision its request read (with the token, at most
  `CLIENT_API_REUSE_SECONDS` old) is not newer than the body's, for at most
  `CLIENT_FEATURES_MAX_AGE` seconds (a change that recorded no event); and on PostgreSQL, when
  write transactions were in flight at its snapshot (one of them may commit an event older
  than the revision seen), for at most `CLIENT_API_REUSE_SECONDS`: it is provisional.
- No herd: when the body must be rebuilt, one request per worker and key builds it while the
  others answer from the body they have; they wait only when there is none.
- A request that must not go back (its SDK holds an ETag other than ours, maybe from another
  worker) asks with `since`: a provisional body built before it arrived is rebuilt.

Two shapes, as Unleash 8.2 sends them: segments' constraints inlined into the strategies that use
them (the default), or, for SDKs that announce client specification 4.2 or later, strategies
naming their segments by id (`segments`) and the segments in use listed once at the top level.
Each shape is a body of its own, kept under its own key, with its own ETag (its query says
`inlineSegmentConstraints`, which the ETag hashes).

The ETag is the query's hash and the flags' hash only, not the revision: any audited write (an
API token created, a user signed in) moves the revision, and a rebuild that finds the same flags
must keep the ETag so that SDKs keep their 304s. The revision the body was built at is in its
`meta.revisionId`.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Q

from features.models import (
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureStrategy,
    FeatureStrategySegment,
    FeatureTag,
    Segment,
)
from flagadmin.core.caches import BoundedCache
from flagadmin.core.db import read_snapshot
from flagadmin.core.models import AuditEvent
from flagadmin.core.sql import column, table


@dataclass(frozen=True)
class FeatureFilter:
    """What an SDK's query narrows its flags to, as Unleash reads it: flags with one of `tags`
    (type, value), in one of `projects` (empty: every project the token reaches), whose name
    starts with `name_prefix`."""

    tags: tuple[tuple[str, str], ...] = ()
    projects: tuple[str, ...] = ()
    name_prefix: str | None = None


EVERY_FLAG = FeatureFilter()


@dataclass(frozen=True)
class ClientFeaturesBody:
    # The newest audit event's id in the snapshot the body was read from.
    revision: int
    # PostgreSQL: write transactions were in flight at that snapshot (see the module's doc).
    provisional: bool
    # `now()` just before the snapshot was taken.
    built_at: float
    etag: str
    body: bytes


def now() -> float:
    """The clock of the bodies' ages (monotonic seconds); tests replace it."""
    return time.monotonic()


# Bodies per (projects, environment, the query's filter): SDKs poll with a fixed query, but
# what a worker keeps is bounded whatever queries are sent, in number and in bytes (the
# oldest built goes first); a body over the bytes' bound is served without being kept.
MAX_KEPT_BODIES = 256
MAX_KEPT_BYTES = 32 * 1024 * 1024


def _body_bytes(kept: ClientFeaturesBody) -> int:
    return len(kept.body)


_cache: BoundedCache[tuple[object, ...], ClientFeaturesBody] = BoundedCache(
    "client payload bodies",
    max_entries=MAX_KEPT_BODIES,
    max_bytes=MAX_KEPT_BYTES,
    size_of=_body_bytes,
)
# Serialises `_keep`'s read and replacement: a kept body never goes back to an older revision.
_lock = threading.Lock()
# Who builds: one lock per stripe of keys, a fixed number whatever queries are sent.
_builders = tuple(threading.Lock() for _ in range(64))


def clear_cache() -> None:
    """Forget every serialized body (each worker rebuilds on its next request)."""
    _cache.clear()


def _keep(key: tuple[object, ...], built: ClientFeaturesBody) -> ClientFeaturesBody:
    """Keep `built` unless a body of a newer revision is kept already; return the kept one."""
    with _lock:
        kept = _cache.get(key)
        if kept is not None and kept.revision > built.revision:
            return kept
        _cache.put(key, built)
        return built


def _is_current(found: ClientFeaturesBody, revision: int, since: float | None) -> bool:
    max_age = (
        settings.CLIENT_API_REUSE_SECONDS if found.provisional else settings.CLIENT_FEATURES_MAX_AGE
    )
    if found.revision < revision or now() - found.built_at >= max_age:
        return False
    return since is None or not found.provisional or found.built_at >= since


def _key(
    projects: tuple[str, ...], environment: str, narrowed: FeatureFilter, segments: bool
) -> tuple[object, ...]:
    """Where a body is kept: the shape with segments at the top level has a key of its own."""
    key: tuple[object, ...] = (projects, environment, narrowed)
    return (*key, SEGMENTS_SHAPE) if segments else key


# The last part of the key of a body in the shape with segments at the top level.
SEGMENTS_SHAPE = "segments"


def kept_body(
    *,
    projects: tuple[str, ...],
    environment: str,
    revision: int,
    narrowed: FeatureFilter = EVERY_FLAG,
    segments: bool = False,
) -> ClientFeaturesBody | None:
    """The body `client_features` would answer with when this worker keeps it current, without
    touching the database; None when it would have to build or wait."""
    found = _cache.get(
        _key(effective_projects(projects, narrowed), environment, narrowed, segments)
    )
    return found if found is not None and _is_current(found, revision, None) else None


def client_features(
    *,
    projects: tuple[str, ...],
    environment: str,
    revision: int,
    narrowed: FeatureFilter = EVERY_FLAG,
    since: float | None = None,
    segments: bool = False,
) -> ClientFeaturesBody:
    """The serialized body for the token's projects and environment, narrowed by the SDK's
    query: this worker's when it is current for `revision`, else rebuilt. `since` (a `now()`):
    the caller must get what was committed before then, so a provisional body built earlier
    will not do, nor the body another request is still building. `segments`: the shape for
    SDKs of client specification 4.2 or later (segments at the top level, see the module's
    doc); by default they are inlined."""
    arrived = now() if since is None else since
    projects = effective_projects(projects, narrowed)
    # The filter whole: `?project=*` filters nothing but is echoed.
    key = _key(projects, environment, narrowed, segments)
    found = _cache.get(key)
    if found is not None and _is_current(found, revision, since):
        return found
    builder = _builders[hash(key) % len(_builders)]
    if found is not None and since is None:
        if not builder.acquire(blocking=False):
            return found  # being rebuilt: the body we have meanwhile
    else:
        builder.acquire()
    try:
        found = _cache.get(key)
        if found is not None and (found.built_at >= arrived or _is_current(found, revision, since)):
            # Built while this request waited, from a snapshot taken after it arrived: as
            # new as one it would build (even provisional, with CLIENT_API_REUSE_SECONDS 0).
            return found
        built = _build(
            projects=projects, environment=environment, narrowed=narrowed, segments=segments
        )
        return _keep(key, built)
    finally:
        builder.release()


def effective_projects(projects: tuple[str, ...], narrowed: FeatureFilter) -> tuple[str, ...]:
    """The projects whose flags an SDK gets: its token's, or, for a token of every project,
    those its query names (as Unleash: a narrower token's projects replace the query's)."""
    return narrowed.projects if "*" in projects and narrowed.projects else projects


def _build(
    *, projects: tuple[str, ...], environment: str, narrowed: FeatureFilter, segments: bool
) -> ClientFeaturesBody:
    built_at = now()
    with read_snapshot():
        revision, provisional = _revision_in_snapshot()
        features, in_use = _client_features_and_segments(
            projects=projects,
            environment=environment,
            narrowed=narrowed,
            inline_segments=not segments,
        )
    # Unleash's keys, in its order; absent when not asked for.
    query: dict[str, Any] = {}
    if narrowed.tags:
        query["tag"] = [list(tag) for tag in narrowed.tags]
    if "*" not in projects or narrowed.projects:
        query["project"] = list(projects)
    if narrowed.name_prefix is not None:
        query["namePrefix"] = narrowed.name_prefix
    query.update(environment=environment, inlineSegmentConstraints=not segments)
    query_hash = hashlib.sha256(json.dumps(query, sort_keys=True).encode()).hexdigest()[:8]
    content = json.dumps(features, separators=(",", ":"), ensure_ascii=False)
    # Unleash's order: the segments between the query and the meta.
    listed = (
        ',"segments":' + json.dumps(in_use, separators=(",", ":"), ensure_ascii=False)
        if segments
        else ""
    )
    content_hash = hashlib.sha256((content + listed).encode()).hexdigest()[:16]
    etag = f'"{query_hash}:{content_hash}"'
    meta = {"revisionId": revision, "etag": etag, "queryHash": query_hash}
    body = (
        '{"version":2,"features":'
        + content
        + ',"query":'
        + json.dumps(query, separators=(",", ":"), ensure_ascii=False)
        + listed
        + ',"meta":'
        + json.dumps(meta, separators=(",", ":"))
        + "}"
    ).encode()
    return ClientFeaturesBody(
        revision=revision, provisional=provisional, built_at=built_at, etag=etag, body=body
    )


def _revision_in_snapshot() -> tuple[int, bool]:
    """The newest audit event's id (0 before any), and whether it may yet be joined by an
    older one: on PostgreSQL, whether write transactions were in flight at the snapshot (the
    first statement of the block, which takes it). An id is taken before its transaction
    commits, so one in flight may commit an id below the newest seen; ids taken after a
    snapshot with none in flight are all above it. SQLite's writers hold the write lock from
    BEGIN to COMMIT, so they commit in id order."""
    newest = f"SELECT COALESCE(MAX({column(AuditEvent, 'id')}), 0) FROM {table(AuditEvent)}"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"SELECT ({newest}), EXISTS (SELECT FROM pg_snapshot_xip(pg_current_snapshot()))"
            )
            revision, in_flight = cursor.fetchone()
            return revision, in_flight
        cursor.execute(newest)
        return cursor.fetchone()[0], False


def client_feature_list(
    *,
    projects: tuple[str, ...],
    environment: str,
    narrowed: FeatureFilter = EVERY_FLAG,
    inline_segments: bool = True,
) -> list[dict[str, Any]]:
    """The active flags of `projects` (`*`: all) as `clientFeatureSchema`, by name, each with
    its state and enabled strategies in `environment`; segments' constraints are inlined into
    the strategies' (as Unleash does with `inlineSegmentConstraints`), or, without
    `inline_segments`, a strategy that uses segments names them (`segments`, their ids in
    order). `narrowed`'s tags and name prefix keep only the flags with one of the tags and a
    name that starts with it. At most six queries whatever the number of flags, in one snapshot."""
    with read_snapshot():
        features, _ = _client_features_and_segments(
            projects=projects,
            environment=environment,
            narrowed=narrowed,
            inline_segments=inline_segments,
        )
    return features


def _client_features_and_segments(
    *,
    projects: tuple[str, ...],
    environment: str,
    narrowed: FeatureFilter,
    inline_segments: bool,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The flags as `client_feature_list` gives them, and the segments in use (those that a
    strategy of any flag, environment or project uses: Unleash's `getActiveForClient`) by
    name, each as `{id, name, constraints}`."""
    # An archived project holds no active flag (its archive is refused while it does); a flag
    # that slipped in meanwhile must still not reach an SDK.
    flags = Feature.objects.filter(archived_at__isnull=True, project__archived_at__isnull=True)
    if "*" not in projects:
        flags = flags.filter(project_id__in=projects)
    prefix = narrowed.name_prefix
    if prefix is not None:
        flags = flags.filter(name__startswith=prefix)
    if narrowed.tags:
        tagged = Q()
        for tag_type, tag_value in narrowed.tags:
            tagged |= Q(tag__type_id=tag_type, tag__value=tag_value)
        flags = flags.filter(name__in=FeatureTag.objects.filter(tagged).values("feature_id"))
    rows = [
        row
        for row in flags.order_by("name").values_list(
            "name", "type", "description", "stale", "impression_data", "project_id"
        )
        # SQLite's LIKE ignores the case of ASCII letters; a prefix is case-sensitive.
        if prefix is None or row[0].startswith(prefix)
    ]
    in_environment = {
        feature_id: (env_id, enabled, variants)
        for env_id, feature_id, enabled, variants in FeatureEnvironment.objects.filter(
            feature__archived_at__isnull=True, environment_id=environment
        ).values_list("id", "feature_id", "enabled", "variants")
    }
    strategies_by_env: dict[int, list[dict[str, Any]]] = defaultdict(list)
    strategy_rows = (
        FeatureStrategy.objects.filter(
            feature_environment__environment_id=environment,
            feature_environment__feature__archived_at__isnull=True,
            disabled=False,
        )
        .order_by("sort_order", "created_at", "id")
        .values_list(
            "id", "feature_environment_id", "name", "constraints", "parameters", "variants"
        )
    )
    segment_ids, in_use = _segments_by_strategy()
    for strategy_id, env_id, name, constraints, parameters, variants in strategy_rows:
        used = segment_ids.get(strategy_id, [])
        strategy: dict[str, Any] = {"name": name}
        if inline_segments:
            strategy["constraints"] = list(constraints) + [
                constraint for segment_id in used for constraint in in_use[segment_id][1]
            ]
        else:
            strategy["constraints"] = constraints
        strategy["parameters"] = parameters
        strategy["variants"] = variants
        if used and not inline_segments:
            strategy["segments"] = sorted(used)
        strategies_by_env[env_id].append(strategy)
    dependencies: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for child, parent, enabled, variants in FeatureDependency.objects.filter(
        child__archived_at__isnull=True
    ).values_list("child_id", "parent_id", "enabled", "variants"):
        # As Unleash's client store: a dependency on a parent that must be off names no variants.
        dependency = {"feature": parent, "enabled": enabled}
        if enabled:
            dependency["variants"] = variants
        dependencies[child].append(dependency)

    result = []
    for name, flag_type, description, stale, impression_data, project_id in rows:
        env_id, enabled, variants = in_environment.get(name, (None, False, []))
        feature: dict[str, Any] = {
            "name": name,
            "type": flag_type,
            "enabled": enabled,
            "project": project_id,
            "stale": stale,
            "strategies": strategies_by_env.get(env_id, []) if env_id is not None else [],
            "variants": sorted(variants, key=lambda variant: variant["name"]),
            "description": description,
            "impressionData": impression_data,
        }
        if name in dependencies:
            feature["dependencies"] = dependencies[name]
        result.append(feature)
    listed = sorted(in_use.items(), key=lambda item: (item[1][0], item[0]))
    segments = [
        {"id": segment_id, "name": name, "constraints": constraints}
        for segment_id, (name, constraints) in listed
    ]
    return result, segments


def _segments_by_strategy() -> tuple[
    dict[Any, list[int]], dict[int, tuple[str, list[dict[str, Any]]]]
]:
    """The segment ids of each strategy (in the links' order), and the segments any strategy
    uses, `id: (name, constraints)`."""
    links = list(
        FeatureStrategySegment.objects.order_by("id").values_list("strategy_id", "segment_id")
    )
    if not links:
        return {}, {}
    in_use = {
        segment_id: (name, constraints)
        for segment_id, name, constraints in Segment.objects.filter(
            pk__in={segment for _, segment in links}
        ).values_list("id", "name", "constraints")
    }
    by_strategy: dict[Any, list[int]] = defaultdict(list)
    for strategy_id, segment_id in links:
        if segment_id in in_use:
            by_strategy[strategy_id].append(segment_id)
    return by_strategy, in_use
