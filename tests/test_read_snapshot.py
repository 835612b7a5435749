"""`flagadmin.db.read_snapshot`: the reads of one response (the project's flags list, the
projects list) see one state of the database, and cannot write."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction

from features.models import Feature
from flagadmin.db import read_snapshot
from tests.concurrency import concurrent_db, run_together
from tests.factories import FeatureFactory

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite reads are not isolated per statement"
)


def _commit_flag_from_another_connection(name: str) -> None:
    (result,) = run_together(1, lambda _: FeatureFactory(name=name))
    assert not isinstance(result, Exception), result


@postgresql_only
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
