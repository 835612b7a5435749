"""GET /api/client/features as one consistent, forward-moving state (docs/client-payload.md):
one snapshot per body, out-of-order commits served within the bound, a poller never sent back
to an older state, one rebuild per worker and key."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction
from django.test import override_settings
from rest_framework.test import APIClient

from client_api import authentication, selectors
from features.models import Feature, FeatureEnvironment, FeatureStrategy
from flagadmin.core.audit import record_event
from flagadmin.core.caches import BoundedCache, named
from flagadmin.core.models import TokenType
from tests.concurrency import concurrent_db, run_together
from tests.factories import make_token

CLIENT_FEATURES = "/api/client/features"

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite commits in id order (one writer at a time)"
)
pytestmark = [concurrent_db, pytest.mark.usefixtures("seeded_rows_back_after_module")]


def sdk() -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=make_token(TokenType.CLIENT, projects=["*"], environment="development")[
            1
        ]
    )
    return client


def kept_bodies() -> BoundedCache:
    """The client payload bodies this worker keeps (a declared cache)."""
    return named("client payload bodies")


def remembered_tokens() -> BoundedCache:
    """The client tokens this worker looked up lately (a declared cache)."""
    return named("client token lookups")


def on_with_one_strategy(name: str) -> FeatureEnvironment:
    Feature.objects.create(name=name, project_id="default")
    environment = FeatureEnvironment.objects.create(
        feature_id=name, environment_id="development", enabled=True
    )
    FeatureStrategy.objects.create(feature_environment=environment, name="default")
    record_event("feature-created", actor=None, feature_name=name, project="default")
    return environment


def drop_last_strategy(environment: FeatureEnvironment) -> None:
    """What deleting a flag's last strategy commits: no strategy, the environment off."""
    with transaction.atomic():
        FeatureStrategy.objects.filter(feature_environment=environment).delete()
        FeatureEnvironment.objects.filter(pk=environment.pk).update(enabled=False)
        record_event("feature-strategy-remove", actor=None, feature_name=environment.feature_id)


def add_it_back(environment: FeatureEnvironment) -> None:
    with transaction.atomic():
        FeatureStrategy.objects.create(feature_environment=environment, name="default")
        FeatureEnvironment.objects.filter(pk=environment.pk).update(enabled=True)
        record_event("feature-strategy-add", actor=None, feature_name=environment.feature_id)


def in_thread(work) -> None:
    (result,) = run_together(1, lambda _: work())
    assert not isinstance(result, Exception), result


def states(body: dict) -> dict[str, tuple[bool, int]]:
    return {flag["name"]: (flag["enabled"], len(flag["strategies"])) for flag in body["features"]}


@pytest.fixture
def clock(monkeypatch) -> list[float]:
    """The bodies' clock, moved by hand (`clock[0] += seconds`); each reading also moves it by
    a microsecond, as time passes between two readings."""
    moment = [1000.0]

    def now() -> float:
        moment[0] += 1e-6
        return moment[0]

    monkeypatch.setattr(selectors, "now", now)
    return moment


# --- one snapshot -------------------------------------------------------------------------


def test_commit_between_the_reads__body_is_the_state_before_it():
    """The last strategy is dropped (and the environment turned off) by another connection
    after the environments were read and before the strategies are: the body is the state
    before that commit, never "on, no strategy", which was never committed."""
    environment = on_with_one_strategy("checkout")
    committed = []

    def commit_between(execute, sql, params, many, context):
        if not committed and 'FROM "features_featurestrategy"' in sql:
            committed.append(1)
            in_thread(lambda: drop_last_strategy(environment))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(commit_between):
        response = sdk().get(CLIENT_FEATURES)

    assert committed
    assert states(response.json()) == {"checkout": (True, 1)}
    assert states(sdk().get(CLIENT_FEATURES).json()) == {"checkout": (False, 0)}


def test_revision_read_in_the_snapshot_of_the_body():
    """An event committed while the body is read is in neither the body nor its revision, so
    the next poll (its revision newer) rebuilds."""
    on_with_one_strategy("checkout")
    environment = FeatureEnvironment.objects.get(feature_id="checkout")
    committed = []

    def commit_between(execute, sql, params, many, context):
        if not committed and 'FROM "features_featureenvironment"' in sql:
            committed.append(1)
            in_thread(lambda: drop_last_strategy(environment))
        return execute(sql, params, many, context)

    client = sdk()
    with connection.execute_wrapper(commit_between):
        first = client.get(CLIENT_FEATURES)
    second = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=first["ETag"])

    assert states(first.json()) == {"checkout": (True, 1)}
    assert second.status_code == 200
    assert states(second.json()) == {"checkout": (False, 0)}
    assert second.json()["meta"]["revisionId"] > first.json()["meta"]["revisionId"]


def test_poller_never_sees_a_torn_state_while_the_last_strategy_comes_and_goes():
    environment = on_with_one_strategy("checkout")
    stop = threading.Event()

    def writer() -> None:
        try:
            while not stop.is_set():
                drop_last_strategy(environment)
                add_it_back(environment)
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    seen = []
    try:
        client = sdk()
        for _ in range(150):
            seen.append(states(client.get(CLIENT_FEATURES).json())["checkout"])
    finally:
        stop.set()
        thread.join(timeout=30)

    assert set(seen) <= {(True, 1), (False, 0)}


# --- versions move forward, and reach every worker within the bound ------------------------


@postgresql_only
@override_settings(CLIENT_API_REUSE_SECONDS=1)
def test_out_of_order_commit__served_within_the_bound(clock):
    """A write takes the lower event id and commits after a write with a higher one: the
    revision does not move when it commits, so the body read meanwhile (provisional: a write
    was in flight at its snapshot) is rebuilt once CLIENT_API_REUSE_SECONDS have passed."""
    on_with_one_strategy("early")
    on_with_one_strategy("late")
    took_its_id, may_commit = threading.Event(), threading.Event()

    def slow_write() -> None:
        try:
            with transaction.atomic():
                record_event("feature-strategy-remove", actor=None, feature_name="early")
                took_its_id.set()
                assert may_commit.wait(30)
                FeatureStrategy.objects.filter(feature_environment__feature_id="early").delete()
                FeatureEnvironment.objects.filter(feature_id="early").update(enabled=False)
        finally:
            connection.close()

    thread = threading.Thread(target=slow_write)
    thread.start()
    try:
        assert took_its_id.wait(30)
        in_thread(lambda: drop_last_strategy(FeatureEnvironment.objects.get(feature_id="late")))
        client = sdk()
        before = client.get(CLIENT_FEATURES)
        (kept,) = kept_bodies().values()
    finally:
        may_commit.set()
        thread.join(timeout=30)
    clock[0] += 0.9
    within = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=before["ETag"])
    clock[0] += 0.2
    after = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=before["ETag"])

    assert kept.provisional
    assert states(before.json()) == {"early": (True, 1), "late": (False, 0)}
    assert within.status_code == 304
    assert after.status_code == 200
    assert states(after.json()) == {"early": (False, 0), "late": (False, 0)}
    assert after.json()["meta"]["revisionId"] == before.json()["meta"]["revisionId"]


@override_settings(CLIENT_API_REUSE_SECONDS=60)
def test_etag_from_a_newer_worker__never_answered_with_an_older_body(clock):
    """The poller got the new state from another worker while this one still reuses its token
    lookup (and the revision read with it) and keeps the old body: it answers 304 for the
    poller's ETag, never the old body."""
    environment = on_with_one_strategy("checkout")
    client = sdk()
    old = client.get(CLIENT_FEATURES)
    this_worker = (dict(kept_bodies()), dict(remembered_tokens()))
    drop_last_strategy(environment)
    # Another worker: nothing kept, so it reads and builds the new state.
    selectors.clear_cache()
    authentication.forget_tokens()
    newer = client.get(CLIENT_FEATURES)
    selectors.clear_cache()
    kept_bodies().update(this_worker[0])
    remembered_tokens().update(this_worker[1])

    reused = client.get(CLIENT_FEATURES)  # no ETag: this worker's body, as before
    polled = client.get(CLIENT_FEATURES, HTTP_IF_NONE_MATCH=newer["ETag"])
    after = client.get(CLIENT_FEATURES)

    assert newer["ETag"] != old["ETag"]
    assert reused["ETag"] == old["ETag"]
    assert polled.status_code == 304
    assert polled["ETag"] == newer["ETag"]
    assert after["ETag"] == newer["ETag"]


def test_kept_body__never_replaced_by_one_of_an_older_revision():
    key = (("*",), "development", selectors.EVERY_FLAG)
    newer = selectors.ClientFeaturesBody(
        revision=7, provisional=False, built_at=0.0, etag='"b"', body=b"{}"
    )
    older = selectors.ClientFeaturesBody(
        revision=6, provisional=False, built_at=1.0, etag='"a"', body=b"{}"
    )

    selectors._keep(key, newer)
    kept = selectors._keep(key, older)

    assert kept is newer
    assert kept_bodies()[key] is newer


# --- no herd ---------------------------------------------------------------------------------


def counting_builds(monkeypatch, before=None) -> list[int]:
    """Counts the bodies built; each build first calls `before` when given."""
    built = []
    build = selectors._build

    def counted(**kwargs):
        built.append(1)
        if before is not None:
            assert before()
        return build(**kwargs)

    monkeypatch.setattr(selectors, "_build", counted)
    return built


def read(revision: int = 0) -> selectors.ClientFeaturesBody:
    return selectors.client_features(projects=("*",), environment="development", revision=revision)


def test_expired_body__one_request_rebuilds__the_others_answer_from_it(monkeypatch, clock):
    on_with_one_strategy("checkout")
    kept = read()
    clock[0] += 3600
    answered = threading.Semaphore(0)
    # The build goes on once the seven others have answered.
    built = counting_builds(
        monkeypatch, before=lambda: all(answered.acquire(timeout=30) for _ in range(7))
    )

    def poll(_: int) -> selectors.ClientFeaturesBody:
        found = read()
        answered.release()
        return found

    results = run_together(8, poll)

    assert not any(isinstance(result, Exception) for result in results), results
    assert built == [1]
    rebuilt = [result for result in results if result is not kept]
    assert len(rebuilt) == 1
    assert rebuilt[0].etag == kept.etag
    assert kept_bodies()[(("*",), "development", selectors.EVERY_FLAG)] is rebuilt[0]


def test_no_body_yet__one_request_builds__the_others_wait_for_it(monkeypatch, settings):
    # A request that arrives once the body is built answers from it: on PostgreSQL a body read
    # while any write was in flight on the server (another database's too) is provisional,
    # current for CLIENT_API_REUSE_SECONDS only (0 in tests).
    settings.CLIENT_API_REUSE_SECONDS = 60
    on_with_one_strategy("checkout")
    built = counting_builds(monkeypatch)

    results = run_together(8, lambda _: read())

    assert not any(isinstance(result, Exception) for result in results), results
    assert len({id(result) for result in results}) == 1
    assert built == [1]


def test_revalidating_requests__provisional_body__one_rebuild_for_all(monkeypatch, clock):
    """Requests that must not answer from an older state than when they arrived (their SDK
    holds another ETag) and find a provisional body: one rebuild, begun after they all
    arrived, serves them all."""
    on_with_one_strategy("checkout")
    kept = read()
    key = (("*",), "development", selectors.EVERY_FLAG)
    kept_bodies()[key] = selectors.ClientFeaturesBody(
        revision=kept.revision, provisional=True, built_at=kept.built_at, etag='"x"', body=b"{}"
    )
    clock[0] += 0.5  # within CLIENT_API_REUSE_SECONDS: current for requests that may wait
    built = counting_builds(monkeypatch)

    with override_settings(CLIENT_API_REUSE_SECONDS=1):
        arrived = selectors.now()
        results = run_together(
            8,
            lambda _: selectors.client_features(
                projects=("*",), environment="development", revision=0, since=arrived
            ),
        )

    assert not any(isinstance(result, Exception) for result in results), results
    assert built == [1]
    assert {result.etag for result in results} == {kept.etag}
