"""flagadmin.core.db.atomic_retrying_conflicts: a transaction PostgreSQL aborts for a conflict with
another (here a real deadlock between two threads) runs again from the start; other errors,
and a transaction inside the caller's, run once."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.db import OperationalError, connection, transaction

from features.models import Feature
from flagadmin.core.db import CONFLICT_ATTEMPTS, atomic_retrying_conflicts
from tests.concurrency import concurrent_db, run_together
from tests.factories import FeatureFactory

# Transactional: the code must see whether it runs inside its caller's transaction.
pytestmark = [concurrent_db, pytest.mark.usefixtures("seeded_rows_back_after_module")]

WAIT = 10  # seconds; only ever reached when the code under test is wrong


def lock(flag: Feature) -> None:
    Feature.objects.filter(pk=flag.pk).select_for_update().get()


def test_atomic_retrying_conflicts__deadlock__the_aborted_one_runs_again():
    if connection.vendor != "postgresql":
        pytest.skip("SQLite takes its write lock when a transaction begins: no deadlock")
    first, second = FeatureFactory(name="first"), FeatureFactory(name="second")
    both_hold_one = threading.Barrier(2, timeout=WAIT)
    runs = [0, 0]

    def work(index: int) -> str:
        # Each thread locks one row, waits until the other holds the other row, then asks for
        # it: a deadlock on the first run. PostgreSQL aborts one; it runs again alone.
        mine, theirs = (first, second) if index == 0 else (second, first)

        def locked_both() -> str:
            runs[index] += 1
            lock(mine)
            if runs[index] == 1:
                both_hold_one.wait()
            lock(theirs)
            Feature.objects.filter(pk=mine.pk).update(description=f"written by {index}")
            return "done"

        return atomic_retrying_conflicts(locked_both)

    results = run_together(2, work)

    assert results == ["done", "done"]
    assert sorted(runs) == [1, 2]
    assert set(
        Feature.objects.filter(name__in=["first", "second"]).values_list("description", flat=True)
    ) == {"written by 0", "written by 1"}


def conflict() -> OperationalError:
    """What Django raises when PostgreSQL aborts a transaction for a deadlock."""
    error = OperationalError("deadlock detected")
    error.__cause__ = psycopg.errors.DeadlockDetected("deadlock detected")
    return error


def test_atomic_retrying_conflicts__conflict_every_time__raised_after_every_attempt():
    runs = []

    def conflicts() -> None:
        runs.append(1)
        FeatureFactory(name=f"attempt-{len(runs)}")
        raise conflict()

    with pytest.raises(OperationalError):
        atomic_retrying_conflicts(conflicts)

    assert len(runs) == CONFLICT_ATTEMPTS
    # Every run's writes went with it.
    assert not Feature.objects.filter(name__startswith="attempt-").exists()


def test_atomic_retrying_conflicts__other_error__raised_after_one_run():
    runs = []

    def fails() -> None:
        runs.append(1)
        raise OperationalError("the database is unreachable")

    with pytest.raises(OperationalError):
        atomic_retrying_conflicts(fails)

    assert runs == [1]


def test_atomic_retrying_conflicts__inside_a_callers_transaction__one_run():
    # Only the caller can run its whole transaction again.
    runs = []

    def conflicts() -> None:
        runs.append(1)
        raise conflict()

    with pytest.raises(OperationalError), transaction.atomic():
        atomic_retrying_conflicts(conflicts)

    assert runs == [1]
