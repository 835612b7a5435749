"""The Frontend API's answer, `{"toggles": [...]}`, byte for byte as Unleash 8.2 writes it
(`frontendApiFeaturesSchema`, Express's `res.json`), and its ETag as Express computes it.

Each toggle is `{name, enabled, variant: {name, enabled, payload?, feature_enabled,
featureEnabled}, impressionData}`, in that order. The engine hands out one `FlagDecision`
object per flag and answer for as long as it holds a state, so each is encoded once and its
bytes reused: a request costs the engine's decisions and one join.
"""

from __future__ import annotations

import base64
import hashlib
import re
import threading
from collections.abc import Sequence

import orjson

from evaluation.engine import FlagDecision

NO_CACHE = re.compile(r"(?:^|,)\s*?no-cache\s*?(?:,|$)")

# Encoded toggles by the decision they encode (the decision is kept with its bytes, so its id
# cannot be taken by another object while it is here). Past the bound it starts again.
_encoded: dict[int, tuple[FlagDecision, bytes]] = {}
_encoded_lock = threading.Lock()
MAX_ENCODED = 50_000


def forget_encoded() -> None:
    with _encoded_lock:
        _encoded.clear()


def toggle(decision: FlagDecision) -> dict:
    """One toggle as a dict (the OpenAPI document's shape; tests compare with it)."""
    variant = decision.variant
    found_variant: dict = {"name": variant.name, "enabled": variant.enabled}
    if variant.payload is not None:
        found_variant["payload"] = {
            "type": variant.payload.get("type"),
            "value": variant.payload.get("value"),
        }
    found_variant["feature_enabled"] = variant.feature_enabled
    found_variant["featureEnabled"] = variant.feature_enabled
    return {
        "name": decision.name,
        "enabled": True,
        "variant": found_variant,
        "impressionData": decision.impression_data,
    }


def _encoded_toggle(decision: FlagDecision) -> bytes:
    kept = _encoded.get(id(decision))
    if kept is not None and kept[0] is decision:
        return kept[1]
    encoded = orjson.dumps(toggle(decision))
    with _encoded_lock:
        if len(_encoded) >= MAX_ENCODED:
            _encoded.clear()
        _encoded[id(decision)] = (decision, encoded)
    return encoded


def toggles_body(decisions: Sequence[FlagDecision]) -> bytes:
    """`{"toggles": [...]}` for the enabled flags' decisions, in their order."""
    return b'{"toggles":[' + b",".join(map(_encoded_toggle, decisions)) + b"]}"


def express_etag(body: bytes) -> str:
    """Express's weak ETag of a body (the `etag` package): its length in hexadecimal and the
    first 27 characters of its SHA-1 in base64. The same body has the same ETag as on
    Unleash."""
    digest = base64.b64encode(hashlib.sha1(body).digest()).decode()[:27]
    return f'W/"{len(body):x}-{digest}"'


def is_fresh(if_none_match: str | None, cache_control: str | None, etag: str) -> bool:
    """Whether the client's copy is `etag`'s, as Express's `fresh` decides a 304: never when
    the request says `Cache-Control: no-cache`; else `If-None-Match` names `etag` (a list of
    ETags, `*`, strong or weak forms alike)."""
    if not if_none_match:
        return False
    if cache_control and NO_CACHE.search(cache_control):
        return False
    wanted = etag.removeprefix("W/")
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == wanted:
            return True
    return False
