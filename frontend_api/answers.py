"""The Frontend API's answer for a context: decided by the worker's engine for the token's
environment, encoded (`toggles.py`), and kept for the contexts that come back.

A browser asks with the same context again and again (`unleash-proxy-client` keeps its
`sessionId`, and polls every 30 s or on each page), and an engine's decisions for a context do
not change while it holds its state, unless a rule depends on the moment (a `DATE_AFTER` or
`DATE_BEFORE` constraint) or on chance (`random` stickiness). So for a state without either,
the answer to a context that names its `sessionId` is kept with the engine, keyed by the
context as the engine reads it, and goes with the engine when a new state replaces it. A
context without a `sessionId` gets a new random one, so it would never come back: not kept.
A GET answered from memory is also kept under its query string and the caller's address (the
context they make), so that the same request again is answered without reading its query.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

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
# What makes a state's decisions depend on more than the context.
UNSTEADY_MARKS = (b'"DATE_AFTER"', b'"DATE_BEFORE"', b'"random"')


class _Kept:
    """The answers kept for one engine, and whether its state allows keeping any."""

    def __init__(self, steady: bool) -> None:
        self.steady = steady
        # (decisions, ETag) by (projects, encoded context), and by (projects, query string,
        # address).
        self.answers: dict[tuple, tuple[tuple[FlagDecision, ...], str]] = {}
        self.size = 0
        self.lock = threading.Lock()

    def keep(self, keys: list[tuple], answer: tuple[tuple[FlagDecision, ...], str]) -> None:
        size = ENTRY_BYTES + 8 * len(answer[0])
        size += sum(KEY_BYTES + sum(len(part) for part in key[1:] if part) for key in keys)
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
    kept = _Kept(steady=not any(mark in found.body for mark in UNSTEADY_MARKS))
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
    comes_back: bool,
    request_key: tuple | None = None,
) -> tuple[bytes, str]:
    """(body, ETag) of the enabled flags of `projects` in `environment` for `context` (as
    `context.unleash_context` builds it). `comes_back`: the caller named the session, so the
    same context may be asked again; `request_key`: what names the request that made the
    context (its query string and address), kept with the answer too."""
    engine = engine_for(environment, revision=revision)
    encoded = encode_context(context)
    key = (tuple(projects), encoded)
    kept = _kept_for(engine, environment, revision) if comes_back else None
    if kept is not None and kept.steady:
        answer = kept.answers.get(key)
        if answer is not None:
            return toggles_body(answer[0]), answer[1]
    decisions = tuple(engine.decide_all(encoded, projects, only_enabled=True))
    body = toggles_body(decisions)
    etag = express_etag(body)
    if kept is not None and kept.steady:
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
        comes_back=bool(js_string(given.get("sessionId"))),
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
