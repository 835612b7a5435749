"""What SDKs receive from GET /api/client/features, serialized once per change.

Every application instance polls this every few seconds, so the JSON body is built once and
reused by each worker while the revision (the newest audit event's id, read with the token in
one query) is unchanged, and for at most CLIENT_FEATURES_MAX_AGE seconds, which bounds how long
a change that recorded no event (or committed after a newer one) takes to reach SDKs.

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
    revision: int
    built_at: float
    etag: str
    body: bytes


# Bodies per (projects, environment, the query's filter): SDKs poll with a fixed query, but
# what a worker keeps is bounded whatever queries are sent, in number and in bytes (the
# oldest built goes first); a body over the bytes' bound is served without being kept.
MAX_KEPT_BODIES = 256
MAX_KEPT_BYTES = 32 * 1024 * 1024
_cache: dict[tuple[object, ...], ClientFeaturesBody] = {}
_kept_bytes = 0
_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every serialized body (each worker rebuilds on its next request)."""
    global _kept_bytes
    with _lock:
        _cache.clear()
        _kept_bytes = 0


def _keep(key: tuple[object, ...], built: ClientFeaturesBody) -> None:
    global _kept_bytes
    with _lock:
        replaced = _cache.pop(key, None)
        if replaced is not None:
            _kept_bytes -= len(replaced.body)
        if len(built.body) > MAX_KEPT_BYTES:
            return
        while _cache and (
            len(_cache) >= MAX_KEPT_BODIES or _kept_bytes + len(built.body) > MAX_KEPT_BYTES
        ):
            _kept_bytes -= len(_cache.pop(next(iter(_cache))).body)
        _cache[key] = built
        _kept_bytes += len(built.body)


def client_features(
    *,
    projects: tuple[str, ...],
    environment: str,
    revision: int,
    narrowed: FeatureFilter = EVERY_FLAG,
) -> ClientFeaturesBody:
    """The serialized body for the token's projects and environment, narrowed by the SDK's
    query, from this worker's cache when it is current."""
    projects = effective_projects(projects, narrowed)
    # The filter whole: `?project=*` filters nothing but is echoed.
    key = (projects, environment, narrowed)
    found = _cache.get(key)
    now = time.monotonic()
    if (
        found is not None
        and found.revision == revision
        and now - found.built_at < settings.CLIENT_FEATURES_MAX_AGE
    ):
        return found
    built = _build(
        projects=projects, environment=environment, narrowed=narrowed, revision=revision, now=now
    )
    _keep(key, built)
    return built


def effective_projects(projects: tuple[str, ...], narrowed: FeatureFilter) -> tuple[str, ...]:
    """The projects whose flags an SDK gets: its token's, or, for a token of every project,
    those its query names (as Unleash: a narrower token's projects replace the query's)."""
    return narrowed.projects if "*" in projects and narrowed.projects else projects


def _build(
    *,
    projects: tuple[str, ...],
    environment: str,
    narrowed: FeatureFilter,
    revision: int,
    now: float,
) -> ClientFeaturesBody:
    features = client_feature_list(projects=projects, environment=environment, narrowed=narrowed)
    # Unleash's keys, in its order; absent when not asked for.
    query: dict[str, Any] = {}
    if narrowed.tags:
        query["tag"] = [list(tag) for tag in narrowed.tags]
    if "*" not in projects or narrowed.projects:
        query["project"] = list(projects)
    if narrowed.name_prefix is not None:
        query["namePrefix"] = narrowed.name_prefix
    query.update(environment=environment, inlineSegmentConstraints=True)
    query_hash = hashlib.sha256(json.dumps(query, sort_keys=True).encode()).hexdigest()[:8]
    content = json.dumps(features, separators=(",", ":"), ensure_ascii=False)
    content_hash = hashlib.sha256(content.encode()).hexdigest()[:16]
    etag = f'"{query_hash}:{content_hash}"'
    meta = {"revisionId": revision, "etag": etag, "queryHash": query_hash}
    body = (
        '{"version":2,"features":'
        + content
        + ',"query":'
        + json.dumps(query, separators=(",", ":"), ensure_ascii=False)
        + ',"meta":'
        + json.dumps(meta, separators=(",", ":"))
        + "}"
    ).encode()
    return ClientFeaturesBody(revision=revision, built_at=now, etag=etag, body=body)


def client_feature_list(
    *, projects: tuple[str, ...], environment: str, narrowed: FeatureFilter = EVERY_FLAG
) -> list[dict[str, Any]]:
    """The active flags of `projects` (`*`: all) as `clientFeatureSchema`, by name, each with
    its state and enabled strategies in `environment`; segments' constraints are inlined into
    the strategies' (as Unleash does with `inlineSegmentConstraints`). `narrowed`'s tags and
    name prefix keep only the flags with one of the tags and a name that starts with it. Five
    queries whatever the number of flags."""
    flags = Feature.objects.filter(archived_at__isnull=True)
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
    segment_constraints = _segment_constraints_by_strategy()
    for strategy_id, env_id, name, constraints, parameters, variants in strategy_rows:
        strategy: dict[str, Any] = {
            "name": name,
            "constraints": list(constraints) + segment_constraints.get(strategy_id, []),
            "parameters": parameters,
            "variants": variants,
        }
        strategies_by_env[env_id].append(strategy)
    dependencies: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for child, parent, enabled, variants in FeatureDependency.objects.filter(
        child__archived_at__isnull=True
    ).values_list("child_id", "parent_id", "enabled", "variants"):
        dependencies[child].append({"feature": parent, "enabled": enabled, "variants": variants})

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
    return result


def _segment_constraints_by_strategy() -> dict[Any, list[dict[str, Any]]]:
    links = list(FeatureStrategySegment.objects.values_list("strategy_id", "segment_id"))
    if not links:
        return {}
    constraints = dict(
        Segment.objects.filter(pk__in={segment for _, segment in links}).values_list(
            "id", "constraints"
        )
    )
    by_strategy: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for strategy_id, segment_id in links:
        by_strategy[strategy_id].extend(constraints.get(segment_id, []))
    return by_strategy
