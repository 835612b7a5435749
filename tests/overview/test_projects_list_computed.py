"""The computed projects list (`PROJECTS_LIST_ENTRY_MAX_AGE=0`) reads every figure on every
request and reuses a project's encoded entry only when the rows it was built from are read
again unchanged (`overview.project_figures._encoded`): after any write, the body equals the one
built from the same rows without that reuse.

These tests run outside any test transaction (`transaction=True`), as a server does.
"""

from __future__ import annotations

import random

import pytest
from django.utils import timezone

from flagadmin.api.renderers import encode_json
from flagadmin.core.caches import BoundedCache, named
from flagadmin.core.models import Role
from overview import project_figures
from tests.concurrency import concurrent_db
from tests.factories import GroupFactory, ProjectFactory, ProjectRoleAssignmentFactory, UserFactory
from tests.overview.test_projects_list_kept import (
    WRITES_OF_EVERY_PATH,
    one_project_of_every_kind,
    random_list_write,
    served,
)

pytestmark = [concurrent_db, pytest.mark.usefixtures("seeded_rows_back_after_module")]


@pytest.fixture(autouse=True)
def computed_list(settings):
    settings.PROJECTS_LIST_ENTRY_MAX_AGE = 0
    for scope in ("active", "archived"):
        encoded_entries(scope).clear()


def encoded_entries(scope: str) -> BoundedCache:
    """The entries this worker keeps encoded for the list of `scope` (a declared cache)."""
    return named(f"projects list: encoded entries ({scope})")


def built_afresh(*, archived: bool = False, user_id: int | None = None) -> bytes:
    """The body from the rows as they are, every entry built and encoded again."""
    projects = project_figures.compute_projects(
        scope="archived" if archived else "active", now=timezone.now(), favorites_of=user_id
    )
    return encode_json({"version": 1, "projects": projects})


@pytest.mark.parametrize("seed", [1, 2])
def test_computed_list__random_writes_of_every_kind__body_equals_one_built_afresh(
    admin_client, viewer_client, seed
):
    rng = random.Random(seed)
    for index in range(3):
        project = ProjectFactory(id=f"computed-{index}", name=f"Project {index}")
        ProjectRoleAssignmentFactory(project=project, role_id=Role.OWNER, user=UserFactory())
    ProjectRoleAssignmentFactory(project_id="computed-0", role_id=Role.OWNER, group=GroupFactory())
    viewer = viewer_client.user

    for step in range(50):
        random_list_write(rng, admin_client, viewer, step)

        assert served(admin_client) == built_afresh(), f"step {step}"
        assert served(admin_client, "?archived=true") == built_afresh(archived=True)
        assert served(viewer_client) == built_afresh(user_id=viewer.pk), f"step {step}"


@pytest.mark.parametrize("write", list(WRITES_OF_EVERY_PATH))
def test_computed_list__one_write__the_entry_shows_it(admin_client, write):
    rows = one_project_of_every_kind()
    before = served(admin_client)

    WRITES_OF_EVERY_PATH[write](rows)

    after = served(admin_client)
    assert after != before
    assert after == built_afresh()


def test_computed_list__nothing_written__every_entry_reused(admin_client):
    one_project_of_every_kind()
    first = served(admin_client)
    active = encoded_entries("active")
    encoded = dict(active)

    again = served(admin_client)

    assert again == first
    assert set(encoded) == {"default", "p"}
    assert all(active[key] is entry for key, entry in encoded.items())


def test_computed_list__entries_of_projects_no_longer_listed__dropped(admin_client):
    gone = project_figures._EncodedEntry(
        source=(), sort_key=("", ""), encoded_favorite=b"", encoded=b""
    )
    for index in range(1100):
        encoded_entries("active")[f"gone-{index}"] = gone

    archived = ProjectFactory(id="old", archived_at=timezone.now())
    served(admin_client, "?archived=true")

    body = served(admin_client)

    assert set(encoded_entries("active")) == {"default"}
    # Each list prunes its own entries: the archived list keeps its project's.
    assert set(encoded_entries("archived")) == {archived.pk}
    assert body == built_afresh()
