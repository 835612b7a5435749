"""The Frontend API's answer for a context: decided by the worker's engine for the token's
environment, encoded (`toggles.py`), and kept for the contexts that come back.

An engine's decisions are a function of the context fields its rules read, and of nothing else
while it holds its state, unless a rule depends on the moment (a `DATE_AFTER` or `DATE_BEFORE`
constraint), on chance (`random` stickiness) or on something an SDK reads outside the context
(`applicationHostname`, a strategy flagadmin does not know). So, once per state, the client
payload is read for the fields its rules read: every constraint's `contextName` (segments'
too), each stickiness named (of rollouts and of strategy and flag variants), `remoteAddress` for
that strategy, each variant override's `contextName`; and `default` stickiness reads `userId`,
else `sessionId`. The answer is kept
with the engine under the values of those fields alone (each as a top-level field and as a
property), and goes with the engine when a new state replaces it. The browser SDK asks with the
same context again and again, and visitors who share what the rules read share an answer. A
key that would hold a `sessionId` drawn at random for the request is never kept.

A GET answered from memory is also kept under its query string and the caller's address (the
context they make), so that the same request again is answered without reading its query.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from django.http import HttpRequest, HttpResponse

from client_api.selectors import client_features
from evaluation.engine import (
    EVERY_PROJECT,
    FlagDecision,
    PayloadEngine,
    encode_context,
    engine_for,
)
from frontend_api.authentication import FrontendPrincipal
from frontend_api.context import js_string, unleash_context
from frontend_api.toggles import express_etag, is_fresh, toggles_body

JSON = "application/json; charset=utf-8"

# Per engine: at most this many bytes of kept answers; past it they are forgotten together. An
# answer is kept as its decisions (a pointer each: the engine holds the decisions, and
# `toggles.py` their encoded bytes), which the body is joined from again: 72 flags on make an
# 11.6 kB body but a 0.7 kB entry.
MAX_KEPT_BYTES = 16 * 1024 * 1024
# What an entry and a key cost besides their bytes (tuples, dictionary slots, the ETag).
ENTRY_BYTES = 400
KEY_BYTES = 200
# What makes a state's decisions depend on more than the context (searched in the payload's
# bytes: a flag named so only costs its state the keeping).
UNSTEADY_MARKS = (b'"DATE_AFTER"', b'"DATE_BEFORE"', b'"random"')
# The strategies whose reads are known, and the context fields each reads besides its
# constraints (flexibleRollout: its stickiness).
STRATEGY_FIELDS: dict[str, tuple[str, ...]] = {
    "default": (),
    "flexibleRollout": (),
    "remoteAddress": ("remoteAddress",),
    "userWithId": ("userId",),
    "gradualRolloutUserId": ("userId",),
    "gradualRolloutSessionId": ("sessionId",),
}


@dataclass(frozen=True, slots=True)
class Reads:
    """What a state's rules read of a context: `steady` False when its decisions depend on
    more than the context; `fields` the context fields named; `by_default` whether some
    stickiness is `default` (userId, else sessionId)."""

    steady: bool
    fields: tuple[str, ...] = ()
    by_default: bool = False


UNSTEADY = Reads(steady=False)


def reads_of(body: bytes) -> Reads:
    """What the rules of the client payload `body` read of a context."""
    if any(mark in body for mark in UNSTEADY_MARKS):
        return UNSTEADY
    payload = orjson.loads(body)
    fields: set[str] = set()
    stickiness: set[str] = set()
    for feature in payload.get("features") or []:
        variants = list(feature.get("variants") or [])
        for strategy in feature.get("strategies") or []:
            name = strategy.get("name")
            if name not in STRATEGY_FIELDS:
                return UNSTEADY
            fields.update(STRATEGY_FIELDS[name])
            if name == "flexibleRollout":
                stickiness.add((strategy.get("parameters") or {}).get("stickiness") or "default")
            fields.update(c["contextName"] for c in strategy.get("constraints") or [])
            variants.extend(strategy.get("variants") or [])
        for variant in variants:
            stickiness.add(variant.get("stickiness") or "default")
            # A variant's overrides (Unleash's older per-context choice) read their fields too.
            fields.update(o["contextName"] for o in variant.get("overrides") or [])
    for segment in payload.get("segments") or []:
        fields.update(c["contextName"] for c in segment.get("constraints") or [])
    by_default = "default" in stickiness
    fields.update(stickiness - {"default"})
    return Reads(steady=True, fields=tuple(sorted(fields)), by_default=by_default)


def context_key(reads: Reads, context: dict[str, Any], session_given: bool) -> tuple | None:
    """The values of what `reads` names in `context` (as `context.unleash_context` builds it),
    each as a field and as a property; None when the answer must not be kept."""
    if not reads.steady:
        return None
    properties = context.get("properties") or {}
    fields = list(reads.fields)
    if reads.by_default:
        fields.append("userId")
        if not context.get("userId"):
            fields.append("sessionId")
    if "sessionId" in fields and not session_given:
        return None  # drawn at random for this request: it never comes back
    return tuple((field, context.get(field), properties.get(field)) for field in fields)


class _Kept:
    """The answers kept for one engine, and what its state's rules read."""

    def __init__(self, reads: Reads) -> None:
        self.reads = reads
        self.steady = reads.steady
        # (decisions, ETag) by (projects, what the rules read), and by (projects, query
        # string, address).
        self.answers: dict[tuple, tuple[tuple[FlagDecision, ...], str]] = {}
        self.size = 0
        self.lock = threading.Lock()

    def keep(self, keys: list[tuple], answer: tuple[tuple[FlagDecision, ...], str]) -> None:
        size = ENTRY_BYTES + 8 * len(answer[0])
        size += sum(KEY_BYTES + len(repr(key[1:])) for key in keys)
        with self.lock:
            if self.size + size > MAX_KEPT_BYTES:
                self.answers.clear()
                self.size = 0
            for key in keys:
                self.answers[key] = answer
            self.size += size


_kept: weakref.WeakKeyDictionary[PayloadEngine, _Kept] = weakref.WeakKeyDictionary()
_kept_lock = threading.Lock()


def forget_answers() -> None:
    with _kept_lock:
        _kept.clear()


def _kept_for(engine: PayloadEngine, environment: str, revision: int) -> _Kept | None:
    kept = _kept.get(engine)
    if kept is not None:
        return kept
    found = client_features(projects=EVERY_PROJECT, environment=environment, revision=revision)
    if found.etag != engine.etag:
        return None  # another state than the engine's: decide, keep nothing this time
    kept = _Kept(reads_of(found.body))
    with _kept_lock:
        return _kept.setdefault(engine, kept)


def kept_answer(
    *, environment: str, projects: Sequence[str], revision: int, request_key: tuple
) -> tuple[bytes, str] | None:
    """The answer kept for the request `request_key` names (see `toggles_answer`), if any."""
    kept = _kept.get(engine_for(environment, revision=revision))
    if kept is None or not kept.steady:
        return None
    answer = kept.answers.get((tuple(projects), *request_key))
    return None if answer is None else (toggles_body(answer[0]), answer[1])


def toggles_answer(
    *,
    environment: str,
    projects: Sequence[str],
    revision: int,
    context: dict[str, Any],
    session_given: bool,
    request_key: tuple | None = None,
) -> tuple[bytes, str]:
    """(body, ETag) of the enabled flags of `projects` in `environment` for `context` (as
    `context.unleash_context` builds it). `session_given`: the caller named the session (else
    it was drawn at random); `request_key`: what names the request that made the context (its
    query string and address), kept with the answer too."""
    engine = engine_for(environment, revision=revision)
    kept = _kept_for(engine, environment, revision)
    found = None if kept is None else context_key(kept.reads, context, session_given)
    key = None if found is None else (tuple(projects), found)
    if key is not None:
        answer = kept.answers.get(key)
        if answer is not None:
            return toggles_body(answer[0]), answer[1]
    decisions = tuple(engine.decide_all(encode_context(context), projects, only_enabled=True))
    body = toggles_body(decisions)
    etag = express_etag(body)
    if key is not None:
        keys = [key] if request_key is None else [key, (key[0], *request_key)]
        kept.keep(keys, (decisions, etag))
    return body, etag


def toggles_response(
    request: HttpRequest,
    principal: FrontendPrincipal,
    given: dict[str, Any],
    request_key: tuple | None = None,
) -> HttpResponse:
    """The answer to a request for the flags, `given` its context (from the query or the
    body): the toggles with Express's ETag, or 304 as Express's `fresh` decides it."""
    answer, etag = toggles_answer(
        environment=principal.environment,
        projects=principal.projects,
        revision=principal.revision,
        context=unleash_context(given, request.META.get("REMOTE_ADDR") or ""),
        session_given=bool(js_string(given.get("sessionId"))),
        request_key=request_key,
    )
    return answer_response(request, answer, etag)


def answer_response(request: HttpRequest, answer: bytes, etag: str) -> HttpResponse:
    fresh = request.method in ("GET", "HEAD") and is_fresh(
        request.META.get("HTTP_IF_NONE_MATCH"), request.META.get("HTTP_CACHE_CONTROL"), etag
    )
    response = HttpResponse(status=304) if fresh else HttpResponse(answer, content_type=JSON)
    response["Cache-Control"] = "no-cache"
    response["ETag"] = etag
    return response
