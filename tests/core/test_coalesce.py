"""flagadmin.core.coalesce: threads asking for the same read at once share one computation, and
never one that began before they asked; the projects list reads through it."""

from __future__ import annotations

import json
import threading
from itertools import count

import pytest

from flagadmin.core.coalesce import Coalescer
from tests.concurrency import concurrent_db, run_together
from tests.factories import FeatureFactory, ProjectFactory, make_token

WAIT = 10  # seconds; only ever reached when the code under test is wrong


def test_coalescer__callers_while_one_computes__share_the_next_computation():
    coalescer: Coalescer[int] = Coalescer()
    first_started, release_first = threading.Event(), threading.Event()
    computations = count(1)

    def compute() -> int:
        number = next(computations)
        if number == 1:
            first_started.set()
            assert release_first.wait(WAIT)
        return number

    first = threading.Thread(target=lambda: results.append(coalescer.run("key", compute)))
    results: list[int] = []
    first.start()
    assert first_started.wait(WAIT)
    # Five callers arrive while the first computation runs: they wait for it to end, then
    # share one computation, which begins after all of them arrived.
    waiting = [
        threading.Thread(target=lambda: results.append(coalescer.run("key", compute)))
        for _ in range(5)
    ]
    for thread in waiting:
        thread.start()
    release_first.set()
    for thread in [first, *waiting]:
        thread.join(WAIT)

    assert sorted(results) == [1, 2, 2, 2, 2, 2]
    assert next(computations) == 3  # two computations in all


def test_coalescer__caller_after_a_computation_began__gets_a_later_one():
    # What a caller gets was computed from a start after its arrival: it counts the writes
    # made before the caller asked, here a counter read when the computation begins.
    coalescer: Coalescer[int] = Coalescer()
    writes = 0
    started, release = threading.Event(), threading.Event()

    def compute() -> int:
        seen = writes
        started.set()
        assert release.wait(WAIT)
        return seen

    results: dict[str, int] = {}
    early = threading.Thread(target=lambda: results.update(early=coalescer.run("k", compute)))
    early.start()
    assert started.wait(WAIT)
    writes = 1  # committed after the first computation began, before the second caller asks
    late = threading.Thread(target=lambda: results.update(late=coalescer.run("k", compute)))
    late.start()
    release.set()
    early.join(WAIT)
    late.join(WAIT)

    assert results == {"early": 0, "late": 1}


def test_coalescer__computation_fails__its_leader_raises_and_the_others_compute_again():
    coalescer: Coalescer[str] = Coalescer()
    blocker_started, release_blocker = threading.Event(), threading.Event()
    calls = count(1)

    def compute() -> str:
        number = next(calls)
        if number == 1:  # holds the key while the batch below forms
            blocker_started.set()
            assert release_blocker.wait(WAIT)
            return "blocker"
        if number == 2:  # the batch's shared computation
            raise RuntimeError("database gone")
        return "own"

    outcomes: list[str] = []

    def call() -> None:
        try:
            outcomes.append(coalescer.run("key", compute))
        except RuntimeError as exc:
            outcomes.append(f"raised: {exc}")

    blocker = threading.Thread(target=call)
    blocker.start()
    assert blocker_started.wait(WAIT)
    batch = [threading.Thread(target=call) for _ in range(3)]
    for thread in batch:
        thread.start()
    release_blocker.set()
    for thread in [blocker, *batch]:
        thread.join(WAIT)

    assert sorted(outcomes) == ["blocker", "own", "own", "raised: database gone"]


class Interrupted(BaseException):
    """Stands for an interruption (KeyboardInterrupt, SystemExit) in the middle of a wait."""


class _InterruptedWait:
    """A batch's `done` whose waiters are interrupted; setting it still works."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        raise Interrupted

    def set(self) -> None:
        self._event.set()


def test_coalescer__leader_interrupted_while_waiting__no_batch_left_open():
    coalescer: Coalescer[str] = Coalescer()
    started, release = threading.Event(), threading.Event()

    def blocking() -> str:
        started.set()
        assert release.wait(WAIT)
        return "first"

    first = threading.Thread(target=lambda: coalescer.run("key", blocking))
    first.start()
    assert started.wait(WAIT)
    # The next caller leads the next batch and is interrupted while it waits for the first.
    coalescer._newest["key"].done = _InterruptedWait()  # type: ignore[assignment]
    with pytest.raises(Interrupted):
        coalescer.run("key", lambda: "never")
    release.set()
    first.join(WAIT)
    # A later caller is not left waiting for a batch nobody computes.
    results: list[str] = []
    later = threading.Thread(
        target=lambda: results.append(coalescer.run("key", lambda: "later")), daemon=True
    )
    later.start()
    later.join(WAIT)

    assert results == ["later"]
    assert coalescer.in_flight() == 0


def test_coalescer__different_keys__computed_apart():
    coalescer: Coalescer[str] = Coalescer()

    assert coalescer.run(("active", 1), lambda: "user 1") == "user 1"
    assert coalescer.run(("active", 2), lambda: "user 2") == "user 2"
    assert coalescer.run(("active", 1), lambda: "again") == "again"
    # Nothing is kept once no computation is running or waiting.
    assert coalescer.in_flight() == 0


def busy_in_projects_list(body: dict) -> int:
    return next(p for p in body["projects"] if p["id"] == "busy")["featureCount"]


def busy_in_flags_list(body: dict) -> int:
    return len(body["features"])


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
@pytest.mark.parametrize(
    ("path", "flags_shown", "entry_max_age"),
    [
        ("/api/admin/projects", busy_in_projects_list, 30),
        # Every entry computed on every read: the reads still share computations.
        ("/api/admin/projects", busy_in_projects_list, 0),
        ("/api/admin/projects/busy/features", busy_in_flags_list, 30),
    ],
)
def test_coalesced_read__concurrent_reads_and_writes__each_read_sees_the_writes_before_it(
    settings, path, flags_shown, entry_max_age
):
    # Readers read in threads while a writer creates flags; every read that starts after the
    # n-th creation returned shows at least n flags (coalesced reads included).
    from rest_framework.test import APIClient

    from flagadmin.core.models import TokenType

    settings.PROJECTS_LIST_ENTRY_MAX_AGE = entry_max_age
    ProjectFactory(id="busy")
    token = make_token(TokenType.ADMIN, name="readers")[1]
    created = 0
    lock = threading.Lock()

    def work(index: int) -> list[str]:
        nonlocal created
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=token)
        problems = []
        for step in range(15):
            if index == 0:
                FeatureFactory(project_id="busy", name=f"busy-{step}")
                with lock:
                    created += 1
                continue
            with lock:
                before = created
            response = client.get(path)
            shown = flags_shown(response.json()) if response.status_code == 200 else -1
            if shown < before:
                problems.append(f"{response.status_code}: {shown} < {before}")
        return problems

    results = run_together(5, work)

    assert results == [[]] * 5


class RecordingCoalescer:
    """Stands in for the projects list's coalescer: records the keys it is asked for."""

    def __init__(self) -> None:
        self.keys: list[tuple] = []

    def run(self, key, compute):
        self.keys.append(key)
        return compute()


# Transactional: the code must see whether the transaction it runs in is its caller's.
@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
@pytest.mark.parametrize(
    ("entry_max_age", "key"),
    [
        (30, ("active", None)),
        (0, ("active", None, "computed")),
    ],
)
def test_projects_list__outside_a_transaction__goes_through_the_coalescer(
    settings, monkeypatch, entry_max_age, key
):
    from overview import project_figures

    settings.PROJECTS_LIST_ENTRY_MAX_AGE = entry_max_age
    ProjectFactory(id="listed")
    recording = RecordingCoalescer()
    monkeypatch.setattr(project_figures, "_list_bodies", recording)

    body = project_figures.projects_list_body(archived=False, user_id=None)

    assert recording.keys == [key]
    assert b'"id":"listed"' in body


# Transactional: the code must see whether the transaction it runs in is its caller's.
@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
@pytest.mark.parametrize("entry_max_age", [30, 0])
def test_projects_list__inside_a_callers_transaction__computed_alone(
    settings, monkeypatch, entry_max_age
):
    # Only this caller's transaction holds its own writes: no other caller may get its answer.
    from django.db import transaction

    from overview import project_figures

    settings.PROJECTS_LIST_ENTRY_MAX_AGE = entry_max_age
    recording = RecordingCoalescer()
    monkeypatch.setattr(project_figures, "_list_bodies", recording)

    with transaction.atomic():
        ProjectFactory(id="uncommitted")
        FeatureFactory(project_id="uncommitted")
        body = project_figures.projects_list_body(archived=False, user_id=None)

    assert recording.keys == []
    listed = {project["id"]: project for project in json.loads(body)["projects"]}
    assert listed["uncommitted"]["featureCount"] == 1
