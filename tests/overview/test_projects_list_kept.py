"""The projects list's kept entries (`overview.project_figures.projects_list_body`): a worker
computes a project's entry again only when the database has drawn a new version for the
project (`ProjectListVersion`), when one of its flags outlives its type's lifetime, or when
the entry is older than `PROJECTS_LIST_ENTRY_MAX_AGE`; the body served is always the body that
computing every entry from the same rows gives.

These tests run outside any test transaction (`transaction=True`), as a server does: inside a
caller's transaction every entry is computed, and none is kept.
"""

from __future__ import annotations

import json
import random
import threading
import time
from datetime import datetime, timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection, connections, transaction
from django.db.utils import OperationalError
from django.test import override_settings
from django.utils import timezone

from features.models import Feature, FeatureType
from flagadmin.core.models import Role, User
from groups.models import Group
from overview import project_figures
from projects.models import (
    OWNER_NAMES,
    FavoriteProject,
    Project,
    ProjectListVersion,
    ProjectRoleAssignment,
)
from tests.concurrency import concurrent_db, run_together
from tests.factories import (
    AuditEventFactory,
    FeatureFactory,
    GroupFactory,
    GroupMembershipFactory,
    ProjectFactory,
    ProjectRoleAssignmentFactory,
    UserFactory,
)
from tests.features.test_project_stats import random_member_writes, random_writes
from tests.overview.test_projects_list import URL, build_instance, listed

pytestmark = [concurrent_db, pytest.mark.usefixtures("seeded_rows_back_after_module")]

KINDS = [
    *("flags", "flags", "flags", "members", "members"),
    *("owner-renamed", "owner-group-renamed", "owner-added", "project-changed"),
    *("project-archived", "created-at", "favorite"),
]


def computed_body(*, archived: bool = False, user_id: int | None = None) -> bytes:
    """The body with every entry computed from the rows, none kept."""
    with override_settings(PROJECTS_LIST_ENTRY_MAX_AGE=0):
        return project_figures.projects_list_body(archived=archived, user_id=user_id)


def served(client, query: str = "") -> bytes:
    response = client.get(URL + query)
    assert response.status_code == 200, response.content
    return response.content


def version(project_id: str) -> str:
    return ProjectListVersion.objects.get(project_id=project_id).version


def random_list_write(rng: random.Random, client, viewer: User, step: int) -> None:
    """One write of a kind that changes what the list shows (or only looks as if it might)."""
    projects = list(Project.objects.values_list("pk", flat=True))
    kind = rng.choice(KINDS)
    if kind == "flags":
        random_writes(rng, client, projects, steps=1, first_step=step)
    elif kind == "members":
        random_member_writes(rng, client, steps=1)
    elif kind == "owner-renamed":
        owner = User.objects.filter(project_assignments__role_id=Role.OWNER).order_by("?")
        for user in owner[:1]:
            user.name = rng.choice(["", f"Renamed {step}"])
            user.email = rng.choice([None, f"renamed{step}-{user.pk}@example.com"])
            user.save()
    elif kind == "owner-group-renamed":
        for group in Group.objects.order_by("?")[:1]:
            group.name = f"group-{step}-{group.pk}"
            group.save()
    elif kind == "owner-added":
        ProjectRoleAssignmentFactory(
            project_id=rng.choice(projects),
            role_id=Role.OWNER,
            **({"user": UserFactory()} if rng.random() < 0.5 else {"group": GroupFactory()}),
        )
    elif kind == "project-changed":
        Project.objects.filter(pk=rng.choice(projects)).update(
            name=f"Project {rng.randint(0, 9)}", description=rng.choice([None, f"d{step}"])
        )
    elif kind == "project-archived":
        Project.objects.filter(pk=rng.choice(projects)).update(
            archived_at=rng.choice([None, timezone.now()])
        )
    elif kind == "created-at":
        Feature.objects.filter(pk__in=Feature.objects.order_by("?")[:1]).update(
            created_at=timezone.now() - timedelta(days=rng.randint(0, 60))
        )
    else:
        project = rng.choice(projects)
        favorite = FavoriteProject.objects.filter(user=viewer, project_id=project)
        if favorite.exists():
            favorite.delete()
        else:
            FavoriteProject.objects.create(user=viewer, project_id=project)


@pytest.mark.parametrize("seed", [1, 2])
def test_list_projects__random_writes_of_every_kind__served_body_equals_a_computation(
    admin_client, viewer_client, seed
):
    rng = random.Random(seed)
    for index in range(3):
        project = ProjectFactory(id=f"kept-{index}", name=f"Project {index}")
        ProjectRoleAssignmentFactory(project=project, role_id=Role.OWNER, user=UserFactory())
    ProjectRoleAssignmentFactory(project_id="kept-0", role_id=Role.OWNER, group=GroupFactory())
    viewer = viewer_client.user

    for step in range(50):
        random_list_write(rng, admin_client, viewer, step)

        assert served(admin_client) == computed_body(), f"step {step}"
        assert served(admin_client, "?archived=true") == computed_body(archived=True)
        assert served(viewer_client) == computed_body(user_id=viewer.pk), f"step {step}"


def one_project_of_every_kind() -> dict:
    """Project `p` with an owner user, an owner group, a member group and two flags."""
    project = ProjectFactory(id="p", name="P")
    owner = UserFactory(name="Owner")
    ProjectRoleAssignmentFactory(project=project, role_id=Role.OWNER, user=owner)
    owners = GroupFactory(name="owners")
    ProjectRoleAssignmentFactory(project=project, role_id=Role.OWNER, group=owners)
    members = GroupFactory(name="members")
    ProjectRoleAssignmentFactory(project=project, role_id=Role.MEMBER, group=members)
    young = FeatureFactory(project_id="p", name="young", type="release")
    # Older than its type's lifetime: potentially stale, until it is a release flag.
    FeatureFactory(
        project_id="p",
        name="other",
        type="operational",
        created_at=timezone.now() - timedelta(days=20),
    )
    return {"owner": owner, "owners": owners, "members": members, "young": young}


# Each write changes what the list shows for `p`, through one path the versions must follow.
WRITES_OF_EVERY_PATH = {
    "owner renamed": lambda rows: User.objects.filter(pk=rows["owner"].pk).update(name="New"),
    "owner's image": lambda rows: User.objects.filter(pk=rows["owner"].pk).update(
        image_url="https://example.com/a.png"
    ),
    "owner group renamed": lambda rows: Group.objects.filter(pk=rows["owners"].pk).update(
        name="renamed"
    ),
    "owner removed": lambda rows: ProjectRoleAssignment.objects.filter(
        group=rows["owners"]
    ).delete(),
    "owner added": lambda rows: ProjectRoleAssignmentFactory(
        project_id="p", role_id=Role.OWNER, user=UserFactory(name="Second")
    ),
    "owner made member": lambda rows: ProjectRoleAssignment.objects.filter(
        user=rows["owner"]
    ).update(role_id=Role.MEMBER),
    "member joined a group": lambda rows: GroupMembershipFactory(group=rows["members"]),
    "project renamed": lambda rows: Project.objects.filter(pk="p").update(name="Q"),
    "project described": lambda rows: Project.objects.filter(pk="p").update(description="d"),
    "flag created": lambda rows: FeatureFactory(project_id="p"),
    "flag archived": lambda rows: Feature.objects.filter(name="other").update(
        archived_at=timezone.now()
    ),
    "flag marked stale": lambda rows: Feature.objects.filter(name="other").update(stale=True),
    "flag type changed": lambda rows: Feature.objects.filter(name="other").update(type="release"),
    "flag created long ago": lambda rows: Feature.objects.filter(name="young").update(
        created_at=timezone.now() - timedelta(days=90)
    ),
    "flag deleted": lambda rows: Feature.objects.filter(name="other").delete(),
    "flag moved away": lambda rows: Feature.objects.filter(name="other").update(
        project_id="default"
    ),
    "flag used": lambda rows: Feature.objects.filter(name="other").update(
        last_seen_at=timezone.now()
    ),
    "event about a flag": lambda rows: AuditEventFactory(project="p", feature_name="other"),
}


@pytest.mark.parametrize("write", WRITES_OF_EVERY_PATH)
def test_list_projects__write_through_any_path__next_read_shows_it(admin_client, write):
    rows = one_project_of_every_kind()
    before = listed(admin_client)["p"]

    WRITES_OF_EVERY_PATH[write](rows)
    after = listed(admin_client)["p"]

    assert after != before
    assert served(admin_client) == computed_body()


def test_list_projects__nothing_written__versions_read_and_entries_kept(
    admin_client, django_assert_max_num_queries
):
    build_instance(15, 12)
    served(admin_client)

    # The token; the versions with the caller's favorites, one statement outside any
    # transaction. Whatever the number of projects and flags.
    with django_assert_max_num_queries(2):
        body = served(admin_client)

    assert body == computed_body()


def test_list_projects__one_project_written__only_it_computed_again(
    admin_client, django_assert_max_num_queries, monkeypatch
):
    build_instance(15, 12)
    served(admin_client)
    FeatureFactory(project_id="default")
    computed_ids = []
    compute = project_figures._computed

    def recording(run, **kwargs):
        computed_ids.append(kwargs.get("ids"))
        return compute(run, **kwargs)

    monkeypatch.setattr(project_figures, "_computed", recording)

    # As above; then, in one snapshot (on PostgreSQL a transaction: its start, its settings,
    # its end), the versions again, and the figures and owners of the one changed project.
    with django_assert_max_num_queries(8):
        body = served(admin_client)

    assert computed_ids == [["default"]]
    assert json.loads(body)["projects"][0]["featureCount"] == 1
    monkeypatch.setattr(project_figures, "_computed", compute)
    assert body == computed_body()


def test_list_projects__flag_outlives_its_lifetime__entry_computed_again(admin_client, clock):
    ProjectFactory(id="aging")
    lifetime = FeatureType.OPERATIONAL.expected_lifetime
    outlived_at = clock.now() + timedelta(seconds=1.5)
    FeatureFactory(project_id="aging", type="operational", created_at=outlived_at - lifetime)
    before = listed(admin_client)["aging"]["potentiallyStaleFeatureCount"]

    # No write: only time passes, on the clock the figures are measured against.
    if connection.vendor == "postgresql":
        wait_for_database_clock(outlived_at)
    else:
        clock.advance(seconds=2)
    after = listed(admin_client)["aging"]

    assert (before, after["potentiallyStaleFeatureCount"], after["health"]) == (0, 1, 0)


def wait_for_database_clock(moment: datetime) -> None:
    """PostgreSQL's clock past `moment`. On PostgreSQL the figures are measured against the
    transaction's own time (`CURRENT_TIMESTAMP`, so that their statement has no parameter and
    is prepared once per connection), which no test can move: the one wait for time left in
    the tests (docs/testing.md)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_sleep(GREATEST(0, EXTRACT(EPOCH FROM %s - CLOCK_TIMESTAMP())))", [moment]
        )


def test_list_projects__entry_older_than_its_max_age__computed_again(
    admin_client, monkeypatch, settings
):
    settings.PROJECTS_LIST_ENTRY_MAX_AGE = 30
    ProjectFactory(id="aged", description="before")
    listed(admin_client)
    kept_version = version("aged")
    Project.objects.filter(pk="aged").update(description="after")
    # A change that drew no new version (none through the database can): made by hand.
    ProjectListVersion.objects.filter(project_id="aged").update(version=kept_version)
    while_kept = listed(admin_client)["aged"]["description"]

    later = time.monotonic() + 31
    monkeypatch.setattr(project_figures, "monotonic", lambda: later)

    assert (while_kept, listed(admin_client)["aged"]["description"]) == ("before", "after")


def test_list_projects__database_back_at_an_earlier_state__shows_that_state(admin_client):
    """A restore from a backup, or a failover to a replica that missed the last writes: the
    rows and their versions are as they were, and a version stands for the rows it was drawn
    with, whatever the database's history since."""
    ProjectFactory(id="restored", description="first")
    first = (listed(admin_client)["restored"]["description"], version("restored"))
    Project.objects.filter(pk="restored").update(description="second")
    second = listed(admin_client)["restored"]["description"]

    Project.objects.filter(pk="restored").update(description="first")
    ProjectListVersion.objects.filter(project_id="restored").update(version=first[1])

    assert (first[0], second, listed(admin_client)["restored"]["description"]) == (
        "first",
        "second",
        "first",
    )


def test_list_projects__write_then_list_in_one_transaction__list_shows_the_write(admin_client):
    ProjectFactory(id="atomic-kept")
    before = listed(admin_client)["atomic-kept"]["featureCount"]  # kept from here

    with transaction.atomic():
        response = admin_client.post(
            "/api/admin/projects/atomic-kept/features",
            json.dumps({"name": "inside"}),
            content_type="application/json",
        )
        assert response.status_code == 201
        inside = listed(admin_client)["atomic-kept"]["featureCount"]
    after = listed(admin_client)["atomic-kept"]["featureCount"]

    assert (before, inside, after) == (0, 1, 1)


def test_list_projects__every_project_has_a_version_from_its_creation_to_its_deletion(
    admin_client,
):
    ProjectFactory(id="short-lived")
    created = ProjectListVersion.objects.filter(project_id="short-lived").exists()
    Project.objects.filter(pk="short-lived").delete()

    assert created
    assert set(
        ProjectListVersion.objects.exclude(project_id=OWNER_NAMES).values_list(
            "project_id", flat=True
        )
    ) == set(Project.objects.values_list("pk", flat=True))


def test_list_projects__concurrent_writers__served_body_equals_a_computation(admin_client):
    ProjectFactory(id="busy")
    ProjectRoleAssignmentFactory(project_id="busy", role_id=Role.OWNER, user=UserFactory())
    served(admin_client)

    def write(index: int) -> int:
        for step in range(8):
            project = ("default", "busy")[(index + step) % 2]
            FeatureFactory(project_id=project, name=f"w{index}-{step}")
            if step % 3 == 0:
                ProjectRoleAssignment.objects.create(
                    project_id=project, role_id=Role.OWNER, user=UserFactory()
                )
            project_figures.projects_list_body(archived=False, user_id=None)
        return 8

    assert run_together(4, write) == [8] * 4
    assert served(admin_client) == computed_body()
    assert listed(admin_client)["busy"]["featureCount"] == 16


postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="versions drawn at commit: PostgreSQL"
)


def other_connection():
    """A second connection to the test database, in a transaction of its own."""
    other = connections.create_connection("default")
    other.set_autocommit(False)
    return other


@postgresql_only
def test_list_projects__owner_renamed_while_made_owner_elsewhere__next_read_shows_new_name(
    admin_client,
):
    ProjectFactory(id="c", name="C")
    owner = UserFactory(name="Old name")
    renaming = other_connection()
    try:
        with renaming.cursor() as cursor:
            cursor.execute("UPDATE flagadmin_user SET name = 'New name' WHERE id = %s", [owner.pk])
            # As if its commit had run its deferred triggers and were still finishing ...
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        # ... when another request makes the user an Owner of "c" and commits, and a list is
        # read: "c" is computed with the old name, and kept.
        ProjectRoleAssignment.objects.create(project_id="c", role_id=Role.OWNER, user=owner)
        while_committing = listed(admin_client)["c"]["owners"][0]["name"]
        renaming.commit()
    finally:
        renaming.close()

    after = listed(admin_client)["c"]["owners"][0]["name"]

    assert (while_committing, after) == ("Old name", "New name")
    assert served(admin_client) == computed_body()


@postgresql_only
def test_list_projects__disjoint_writers_commit_together__never_wait_for_each_other():
    """Two transactions that lock no common row: one marks flags stale in b, then a; the other
    edits projects a, then b. Their commits, released at once, draw both versions; they must
    never deadlock (they would if each drew them in the order it wrote)."""
    for project in ("a", "b"):
        ProjectFactory(id=project)
        FeatureFactory(project_id=project, name=f"flag-{project}", type="release")
    errors: list[Exception] = []

    def write_and_commit(index: int, barrier: threading.Barrier, step: int) -> None:
        other = other_connection()
        try:
            with other.cursor() as cursor:
                if index == 0:
                    for name in ("flag-b", "flag-a"):
                        cursor.execute(
                            "UPDATE features_feature SET stale = NOT stale WHERE name = %s", [name]
                        )
                else:
                    for project in ("a", "b"):
                        cursor.execute(
                            "UPDATE projects_project SET description = %s WHERE id = %s",
                            [str(step), project],
                        )
            barrier.wait()
            other.commit()
        except OperationalError as exc:
            errors.append(exc.__cause__ or exc)
        finally:
            other.close()

    for step in range(200):
        barrier = threading.Barrier(2)
        threads = [
            threading.Thread(target=write_and_commit, args=(index, barrier, step))
            for index in range(2)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)

    assert errors == []


def test_repairprojectstats__versions_drawn_again_and_missing_ones_made(admin_client):
    ProjectFactory(id="restored-without-triggers", description="kept")
    listed(admin_client)
    before = version("restored-without-triggers")
    # Rows written with the triggers off: a changed row, and a version row gone.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE projects_project SET description = 'changed'"
            " WHERE id = 'restored-without-triggers'"
        )
    ProjectListVersion.objects.filter(project_id="restored-without-triggers").update(version=before)
    ProjectListVersion.objects.filter(project_id="default").delete()

    call_command("repairprojectstats", stdout=StringIO())

    assert version("restored-without-triggers") != before
    assert ProjectListVersion.objects.filter(project_id="default").exists()
    assert listed(admin_client)["restored-without-triggers"]["description"] == "changed"
