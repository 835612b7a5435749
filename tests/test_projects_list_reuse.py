"""GET /api/admin/projects outside a transaction, as a server runs: the computed list is
reused while the database is unchanged (PostgreSQL), and recomputed as soon as anything
changed or a flag reaches its potentially stale age."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from projects import queries
from tests.factories import FeatureFactory, ProjectFactory
from tests.test_projects_list import listed

# The list is reused only outside a transaction (one whose own uncommitted writes the snapshot
# check cannot see), so these tests commit; serialized_rollback gives each the seeded rows.
pytestmark = [
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("seeded_rows_back_after_module"),
]


@pytest.fixture
def committed(admin_client, monkeypatch):
    """The admin client, with `.computations`: the scopes computed (not reused) so far."""
    computations: list[str] = []
    original = queries.compute_projects

    def counting(**kwargs):
        computations.append(kwargs["scope"])
        return original(**kwargs)

    monkeypatch.setattr(queries, "compute_projects", counting)
    queries._reused.clear()
    admin_client.computations = computations
    yield admin_client
    queries._reused.clear()


def reused_on_this_database() -> bool:
    return connection.vendor == "postgresql"


def test_list_projects__unchanged_database__reused_until_a_write(committed):
    project = ProjectFactory(id="reuse-a")
    FeatureFactory(project_id=project.pk)
    listed(committed)  # the token's first use is a write (its last use time)
    # Another database of the same PostgreSQL server (other test runs) moves the snapshot
    # too: try until two reads fall in one quiet moment.
    for _ in range(20):
        before = queries._database_state()
        first = listed(committed)["reuse-a"]
        computed = len(committed.computations)
        second = listed(committed)["reuse-a"]
        if queries._database_state() == before:
            break
    else:
        pytest.skip("the database server never stayed quiet for two requests")

    assert first == second
    assert len(committed.computations) - computed == (0 if reused_on_this_database() else 1)

    FeatureFactory(project_id=project.pk, stale=True)
    after_write = listed(committed)["reuse-a"]

    assert (after_write["featureCount"], after_write["staleFeatureCount"]) == (2, 1)


def test_list_projects__bulk_update_without_events__seen_at_once(committed):
    project = ProjectFactory(id="reuse-b")
    flag = FeatureFactory(project_id=project.pk)
    assert listed(committed)["reuse-b"]["staleFeatureCount"] == 0

    type(flag).objects.filter(pk=flag.pk).update(stale=True)

    assert listed(committed)["reuse-b"]["staleFeatureCount"] == 1


def test_list_projects__flag_reaches_its_lifetime__recomputed_then(committed, monkeypatch):
    project = ProjectFactory(id="reuse-c")
    FeatureFactory(
        project_id=project.pk,
        type="operational",
        created_at=timezone.now() - timedelta(days=7) + timedelta(minutes=1),
    )
    assert listed(committed)["reuse-c"]["potentiallyStaleFeatureCount"] == 0
    later = timezone.now() + timedelta(minutes=2)

    monkeypatch.setattr(queries.timezone, "now", lambda: later)

    assert listed(committed)["reuse-c"]["potentiallyStaleFeatureCount"] == 1


def test_list_projects__archived_and_active__kept_apart(committed):
    ProjectFactory(id="reuse-d", archived_at=timezone.now())

    active = listed(committed)
    archived = listed(committed, "?archived=true")

    assert "reuse-d" not in active
    assert "reuse-d" in archived


def test_list_projects__reuse_turned_off__computed_every_time(committed, settings):
    settings.PROJECTS_LIST_REUSE = False
    listed(committed)

    listed(committed)
    listed(committed)

    assert len(committed.computations) == 3
