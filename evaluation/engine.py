"""Flags decided on the server by Yggdrasil, Unleash's own evaluation engine (the PyPI package
`yggdrasil-engine`, which Unleash Edge and the newer SDKs evaluate with), over exactly the client
payload that SDKs receive. Design and measurements: docs/evaluation.md.

The public interface, for the playground and the Frontend API:

- `decide_all(environment, context, projects=None, *, revision=None, only_enabled=False)`:
  a `FlagDecision` for every active flag of `projects` (None: all) in `environment`, in the
  client payload's order (by name).
- `decide(environment, name, context, *, revision=None)`: one flag's decision, None when no
  active flag has that name.
- `FlagDecision(name, project, enabled, variant, impression_data)`, `VariantDecision(name,
  enabled, payload, feature_enabled)`: immutable; `payload` is `{"type", "value"}` or None.
- `sdk_context(context)`: a context as Unleash's SDKs take it (`userId`, `sessionId`,
  `remoteAddress`, `environment`, `appName`, `currentTime`, `properties`), in the form the
  engine is asked with: values as strings, other top-level fields moved into `properties`
  (a property of the same name wins), None left out; what the Python SDK does to a context.
  `decide_all` and `decide` apply it themselves, or take it encoded by `encode_context` (a
  caller asking several engines with one context). Nothing is filled in: an SDK's own
  `appName` and `environment` (its static context) are the caller's to add.
- `revision`: the newest audit event id the caller has read, as the client API reads it with
  the token (`ClientPrincipal.revision`), so that a request costs no query while the state is
  current; None: read now (one query).
- `fresh_engine(environment)`: the engine for what is committed now (the playground).
- `clear_engines()`: forget every engine of this process (tests; the next call rebuilds).

How the state is kept, per worker process and per environment: the engine's state is the body
`client_api.selectors.client_features` serves to an SDK whose token reaches every project, so it
follows the same versioning rules (built from one snapshot, rebuilt when the revision read with
the token moves or after `CLIENT_FEATURES_MAX_AGE`, never replaced by an older one, one build
per worker while the others answer from the body they have). A new body whose ETag (its flags'
hash) differs is taken into a fresh engine by one thread at a time per environment; the others
keep deciding with the current engine meanwhile, and wait only when there is none. An engine
is never changed once built, so decisions in flight finish on the state they started with.

Decisions: a flag that is off in the environment is off whatever the context, so the engine is
not asked (its decision is made once per state); every other flag is asked once, for its
variant, whose `featureEnabled` is the engine's `isEnabled` (dependencies included: a child of
a disabled parent is asked, and the engine checks the parent). The engine is called through its
C interface with the context encoded once per call of `decide_all`: the package's Python wrapper
encodes the context and asks a second time for impression data on every flag, which the
payload already says (`impressionData`). Calls into one engine are serialised by its lock: the
library hands every call a mutable reference to the engine, so two threads must not share it.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import orjson

from client_api.selectors import ClientFeaturesBody, client_features, now
from evaluation.yggdrasil import Engine, answer_value
from flagadmin.core.caches import BoundedCache
from flagadmin.core.tokens import current_revision

EVERY_PROJECT = ("*",)

# The fields Unleash's SDKs read from the context's top level; any other is a property.
CONTEXT_FIELDS = frozenset(
    ("userId", "sessionId", "remoteAddress", "environment", "appName", "currentTime")
)


@dataclass(frozen=True, slots=True)
class VariantDecision:
    name: str
    enabled: bool
    payload: dict[str, str] | None
    feature_enabled: bool


@dataclass(frozen=True, slots=True)
class FlagDecision:
    name: str
    project: str
    enabled: bool
    variant: VariantDecision
    impression_data: bool


DISABLED_VARIANT = VariantDecision(
    name="disabled", enabled=False, payload=None, feature_enabled=False
)


def _variant_of(answer: bytes) -> VariantDecision | None:
    """The variant in an engine's answer (`{name, enabled, featureEnabled, payload?}`); None
    for a flag the engine does not know."""
    value = answer_value(answer)
    if value is None:
        return None
    return VariantDecision(
        name=value["name"],
        enabled=bool(value.get("enabled")),
        payload=value.get("payload"),
        feature_enabled=bool(value.get("featureEnabled")),
    )


# --- contexts ------------------------------------------------------------------------------------


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, int | float):
        return str(value)
    return None  # lists, objects: nothing a constraint can compare


def sdk_context(context: Mapping[str, Any]) -> dict[str, Any]:
    """`context` in the form the engine is asked with (see the module's doc)."""
    found: dict[str, Any] = {}
    properties: dict[str, str] = {}
    for key, value in context.items():
        if key == "properties":
            continue
        text = _text(value)
        if text is None:
            continue
        if key in CONTEXT_FIELDS:
            found[key] = text
        else:
            properties[key] = text
    given = context.get("properties")
    if isinstance(given, Mapping):
        for key, value in given.items():
            text = _text(value)
            if text is not None:
                properties[str(key)] = text
    if properties:
        found["properties"] = properties
    return found


def encode_context(context: Mapping[str, Any]) -> bytes:
    """`context` as the engine reads it: `sdk_context`'s form, as JSON. `decide_all` and
    `decide` take it encoded too, for a caller that asks several engines with one context."""
    return orjson.dumps(sdk_context(context))


def features_digest(features: list[dict[str, Any]]) -> str:
    """What identifies a client payload's flags (`features`, as built or as parsed back from
    the body): a hash of their compact JSON, keys in their order."""
    return hashlib.blake2b(orjson.dumps(features), digest_size=16).hexdigest()


# --- one state -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Flag:
    name: str
    encoded_name: bytes
    project: str
    enabled: bool
    impression_data: bool
    # Its decision when it is off in the environment (the same for every context).
    off: FlagDecision
    # Its decisions by the engine's answer: a flag has few (one per variant, on or off), and
    # parsing one and building its decision cost three times the engine's own work.
    answers: dict[bytes, FlagDecision]


# Answers kept per flag; past it (a payload of many variants) they are parsed each time.
MAX_ANSWERS_PER_FLAG = 64


class PayloadEngine:
    """An engine holding one client payload, with the flags' facts the decisions need. Built
    from a payload's bytes alone (no database): the benchmark builds it directly."""

    def __init__(self, body: bytes, *, etag: str = "", built_at: float = 0.0) -> None:
        self.etag = etag
        self.built_at = built_at
        self._engine = Engine(body)
        features = orjson.loads(body)["features"]
        self.digest = features_digest(features)
        flags = []
        for feature in features:
            name, project = feature["name"], feature.get("project") or "default"
            impression_data = bool(feature.get("impressionData"))
            flags.append(
                _Flag(
                    name=name,
                    encoded_name=name.encode(),
                    project=project,
                    enabled=bool(feature.get("enabled")),
                    impression_data=impression_data,
                    off=FlagDecision(name, project, False, DISABLED_VARIANT, impression_data),
                    answers={},
                )
            )
        self._flags = tuple(flags)
        self._by_name = {flag.name: flag for flag in flags}
        by_project: dict[str, list[_Flag]] = {}
        for flag in flags:
            by_project.setdefault(flag.project, []).append(flag)
        self._by_project = {project: tuple(found) for project, found in by_project.items()}

    @classmethod
    def from_client_body(cls, found: ClientFeaturesBody) -> PayloadEngine:
        return cls(found.body, etag=found.etag, built_at=found.built_at)

    def flags_of(self, projects: Iterable[str] | None) -> tuple[_Flag, ...] | list[_Flag]:
        if projects is None or "*" in projects:
            return self._flags
        wanted = set(projects)
        if len(wanted) == 1:
            return self._by_project.get(next(iter(wanted)), ())
        return [flag for flag in self._flags if flag.project in wanted]

    def is_on(self, name: str) -> bool:
        """Whether the flag is enabled in the environment (not archived, known)."""
        flag = self._by_name.get(name)
        return flag is not None and flag.enabled

    def decide_all(
        self,
        context: Mapping[str, Any] | bytes,
        projects: Iterable[str] | None = None,
        *,
        only_enabled: bool = False,
    ) -> list[FlagDecision]:
        flags = self.flags_of(projects)
        encoded = context if isinstance(context, bytes) else encode_context(context)
        decisions: list[FlagDecision] = []
        with self._engine.lock:
            for flag in flags:
                if not flag.enabled:
                    if not only_enabled:
                        decisions.append(flag.off)
                    continue
                decision = self._decide(flag, encoded)
                if decision.enabled or not only_enabled:
                    decisions.append(decision)
        return decisions

    def decide(self, name: str, context: Mapping[str, Any] | bytes) -> FlagDecision | None:
        flag = self._by_name.get(name)
        if flag is None:
            return None
        if not flag.enabled:
            return flag.off
        encoded = context if isinstance(context, bytes) else encode_context(context)
        with self._engine.lock:
            return self._decide(flag, encoded)

    def _decide(self, flag: _Flag, encoded_context: bytes) -> FlagDecision:
        answer = self._engine.variant(flag.encoded_name, encoded_context)
        decision = flag.answers.get(answer)
        if decision is None:
            variant = _variant_of(answer)
            if variant is None:
                return flag.off
            decision = FlagDecision(
                flag.name, flag.project, variant.feature_enabled, variant, flag.impression_data
            )
            if len(flag.answers) < MAX_ANSWERS_PER_FLAG:
                flag.answers[answer] = decision
        return decision


# --- the engines of this process -----------------------------------------------------------------

# Environments with an engine in this process: a handful in practice; bounded whatever names
# callers ask for (the oldest kept goes first).
MAX_ENGINES = 64
_engines: BoundedCache[str, PayloadEngine] = BoundedCache(
    "evaluation engines", max_entries=MAX_ENGINES
)
# Who takes a new state into an engine: one lock per stripe of environments, a fixed number
# whatever names callers ask for.
_takers = tuple(threading.Lock() for _ in range(64))


def clear_engines() -> None:
    """Forget every engine of this process (the next decision of each environment rebuilds)."""
    _engines.clear()


def _taker(environment: str) -> threading.Lock:
    return _takers[hash(environment) % len(_takers)]


def _holds(engine: PayloadEngine | None, found: ClientFeaturesBody) -> bool:
    """Whether `engine` holds `found`'s flags or a newer state: the same ETag (the flags'
    hash), or built from a body built later (one build at a time per key, so a later build
    read a later snapshot)."""
    return engine is not None and (engine.etag == found.etag or engine.built_at >= found.built_at)


def engine_for(
    environment: str, *, revision: int | None = None, since: float | None = None
) -> PayloadEngine:
    """This process's engine for `environment`, current for `revision` (None: read now).
    `since` (a `client_api.selectors.now()`): the caller must decide on what was committed
    before then, so it waits for a body and an engine being built meanwhile (the playground)."""
    if revision is None:
        revision = current_revision()
    found = client_features(
        projects=EVERY_PROJECT, environment=environment, revision=revision, since=since
    )
    engine = _engines.get(environment)
    if _holds(engine, found):
        return engine
    taker = _taker(environment)
    if engine is not None and since is None:
        if not taker.acquire(blocking=False):
            return engine  # another thread is taking the new state: the current one meanwhile
    else:
        taker.acquire()
    try:
        engine = _engines.get(environment)
        if _holds(engine, found):
            return engine
        engine = PayloadEngine.from_client_body(found)
        _engines.put(environment, engine)
        return engine
    finally:
        taker.release()


def decide_all(
    environment: str,
    context: Mapping[str, Any],
    projects: Iterable[str] | None = None,
    *,
    revision: int | None = None,
    only_enabled: bool = False,
) -> list[FlagDecision]:
    """A decision for every active flag of `projects` (None or `*`: all) in `environment`,
    for `context` as SDKs take it; `only_enabled`: the enabled ones only (what the Frontend
    API serves). In the client payload's order."""
    return engine_for(environment, revision=revision).decide_all(
        context, projects, only_enabled=only_enabled
    )


def decide(
    environment: str, name: str, context: Mapping[str, Any], *, revision: int | None = None
) -> FlagDecision | None:
    """The decision for the active flag `name` in `environment`; None when there is none."""
    return engine_for(environment, revision=revision).decide(name, context)


def fresh_engine(environment: str) -> PayloadEngine:
    """The engine for what is committed now: for callers that must see a change made just
    before (an operator's playground after an edit), at the cost of a query and of waiting
    for a build in progress."""
    return engine_for(environment, revision=current_revision(), since=now())
