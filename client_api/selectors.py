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

from features.models import (
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureStrategy,
    FeatureStrategySegment,
    Segment,
)


@dataclass(frozen=True)
class ClientFeaturesBody:
    revision: int
    built_at: float
    etag: str
    body: bytes


_cache: dict[tuple[tuple[str, ...], str], ClientFeaturesBody] = {}
_lock = threading.Lock()


def clear_cache() -> None:
    """Forget every serialized body (each worker rebuilds on its next request)."""
    with _lock:
        _cache.clear()


def client_features(*, projects: tuple[str, ...], environment: str, revision: int):
    """The serialized body for the token's projects and environment, from this worker's cache
    when it is current."""
    key = (projects, environment)
    found = _cache.get(key)
    now = time.monotonic()
    if (
        found is not None
        and found.revision == revision
        and now - found.built_at < settings.CLIENT_FEATURES_MAX_AGE
    ):
        return found
    built = _build(projects=projects, environment=environment, revision=revision, now=now)
    with _lock:
        _cache[key] = built
    return built


def _build(
    *, projects: tuple[str, ...], environment: str, revision: int, now: float
) -> ClientFeaturesBody:
    features = client_feature_list(projects=projects, environment=environment)
    query: dict[str, Any] = {"environment": environment, "inlineSegmentConstraints": True}
    if "*" not in projects:
        query["project"] = list(projects)
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


def client_feature_list(*, projects: tuple[str, ...], environment: str) -> list[dict[str, Any]]:
    """The active flags of `projects` (`*`: all) as `clientFeatureSchema`, by name, each with
    its state and enabled strategies in `environment`; segments' constraints are inlined into
    the strategies' (as Unleash does with `inlineSegmentConstraints`). Five queries whatever
    the number of flags."""
    flags = Feature.objects.filter(archived_at__isnull=True)
    if "*" not in projects:
        flags = flags.filter(project_id__in=projects)
    rows = list(
        flags.order_by("name").values_list(
            "name", "type", "description", "stale", "impression_data", "project_id"
        )
    )
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
