"""`flagadmin.core.db.read_snapshot`: the reads of one response (the project's flags list, the
projects list, the client payload) see one state of the database (PostgreSQL and SQLite), and
cannot write (PostgreSQL)."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from features.models import Feature, FeatureEnvironment
from flagadmin.core.db import read_snapshot
from tests.concurrency import concurrent_db, run_together
from tests.factories import FeatureFactory

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's read-only transactions and settings"
)


def _commit_flag_from_another_connection(name: str) -> None:
    (result,) = run_together(1, lambda _: FeatureFactory(name=name))
    assert not isinstance(result, Exception), result


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
def test_read_snapshot__commit_during_the_block__unseen_until_it_ends():
    FeatureFactory(name="before")

    with read_snapshot():
        first = set(Feature.objects.values_list("name", flat=True))
        _commit_flag_from_another_connection("during")
        second = set(Feature.objects.values_list("name", flat=True))
    after = set(Feature.objects.values_list("name", flat=True))

    assert "before" in first
    assert "during" not in first | second
    assert second == first
    assert after == first | {"during"}


@postgresql_only
@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
def test_read_snapshot__write_in_the_block__refused():
    with pytest.raises(DatabaseError, match="read-only transaction"), read_snapshot():
        FeatureFactory(name="refused")

    assert not Feature.objects.filter(name="refused").exists()


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
def test_read_snapshot__inside_a_callers_transaction__sees_its_writes_and_leaves_it_open():
    with transaction.atomic():
        FeatureFactory(name="uncommitted")
        with read_snapshot():
            seen = Feature.objects.filter(name="uncommitted").exists()
        # Still the caller's transaction, still writable.
        FeatureFactory(name="after-the-read")
        assert connection.in_atomic_block

    assert seen
    assert Feature.objects.filter(name__in=["uncommitted", "after-the-read"]).count() == 2


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
def test_project_features__flag_committed_between_the_reads__left_out_whole(admin_client):
    """Another connection commits a flag (with its environment) after the flags were read and
    before their environments are: the answer is whole and leaves that flag out (PostgreSQL:
    the reads share one snapshot; SQLite: rows of flags not read first are skipped)."""
    FeatureFactory(name="present")
    FeatureEnvironment.objects.create(feature_id="present", environment_id="development")
    committed = []

    def commit_between(execute, sql, params, many, context):
        if not committed and 'FROM "features_featureenvironment"' in sql:
            committed.append(1)
            _commit_flag_from_another_connection("created-meanwhile")
            (result,) = run_together(
                1,
                lambda _: FeatureEnvironment.objects.create(
                    feature_id="created-meanwhile", environment_id="development"
                ),
            )
            assert not isinstance(result, Exception), result
        return execute(sql, params, many, context)

    with connection.execute_wrapper(commit_between):
        response = admin_client.get("/api/admin/projects/default/features")

    assert committed
    assert response.status_code == 200
    features = response.json()["features"]
    assert [feature["name"] for feature in features] == ["present"]
    assert [env["name"] for env in features[0]["environments"]] == ["development"]
    assert Feature.objects.filter(name="created-meanwhile").exists()


@postgresql_only
@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
def test_read_snapshot__autocommit_off__callers_transaction_left_as_it_is():
    transaction.set_autocommit(False)
    try:
        Feature.objects.count()  # the caller's transaction has begun
        with read_snapshot(local_settings=["jit = off"]):
            Feature.objects.count()
        FeatureFactory(name="written-after")  # still writable
        transaction.commit()
    finally:
        transaction.rollback()
        transaction.set_autocommit(True)

    assert Feature.objects.filter(name="written-after").exists()
