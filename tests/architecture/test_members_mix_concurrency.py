"""Membership writes at once, from several threads, across three projects and three groups:
group updates (each replaces a group's members, whose paths into every project where the
group holds a role change with them) and project access grants to users and groups. No
request fails for another (no 5xx: a deadlock would be one), every kind succeeds, and the
kept member counts equal a recount."""

from __future__ import annotations

import json
import random
import threading
from collections import Counter

import pytest
from django.http import HttpResponse
from django.test import Client
from rest_framework.test import APIClient

from auth_saml.services import sync_sso_groups
from flagadmin.core.locks import members_write
from flagadmin.core.models import Role, TokenType, User
from groups.models import Group, GroupMembership
from projects.models import ProjectRoleAssignment
from tests.concurrency import concurrent_db, run_together
from tests.factories import GroupFactory, ProjectFactory, UserFactory, make_token
from tests.features.test_project_stats import assert_members_equal_a_recount

PROJECTS = ["north", "south", "east"]


def put_members(client: APIClient, group, people) -> HttpResponse:
    """PUT /api/admin/groups/:id with the group's name and `people` as its members."""
    return client.put(
        f"/api/admin/groups/{group.pk}",
        json.dumps({"name": group.name, "users": [{"user": {"id": u.pk}} for u in people]}),
        content_type="application/json",
    )


def grant(client: APIClient, project_id: str, roles, people=(), groups=()) -> HttpResponse:
    """POST /api/admin/projects/:id/access: every role to every person and group."""
    return client.post(
        f"/api/admin/projects/{project_id}/access",
        json.dumps(
            {
                "roles": list(roles),
                "users": [u.pk for u in people],
                "groups": [g.pk for g in groups],
            }
        ),
        content_type="application/json",
    )


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
@pytest.mark.parametrize("seed", [1, 2])
def test_members_mix__concurrent_group_updates_and_grants__none_fails(seed):
    for project in PROJECTS:
        ProjectFactory(id=project)
    groups = GroupFactory.create_batch(3)
    users = UserFactory.create_batch(8)
    # Every group holds a role in two projects: a group update moves members of both.
    for index, group in enumerate(groups):
        for project in (PROJECTS[index], PROJECTS[(index + 1) % 3]):
            ProjectRoleAssignment.objects.create(
                project_id=project, role_id=Role.MEMBER, group=group
            )
    token = make_token(TokenType.ADMIN, name="members")[1]
    succeeded: Counter[str] = Counter()

    def work(index: int) -> list[str]:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=token)
        rng = random.Random(seed * 100 + index)
        problems = []
        for _ in range(12):
            if rng.random() < 0.5:
                action = "group"
                group = rng.choice(groups)
                members = rng.sample(users, rng.randrange(0, 6))
                response = put_members(client, group, members)
            else:
                action = "access"
                response = grant(
                    client,
                    rng.choice(PROJECTS),
                    rng.sample([Role.OWNER, Role.MEMBER], rng.randrange(1, 3)),
                    rng.sample(users, rng.randrange(0, 4)),
                    rng.sample(groups, rng.randrange(0, 2)),
                )
            if response.status_code >= 500:
                problems.append(f"{action}: {response.status_code} {response.content[:160]!r}")
            elif response.status_code < 300:
                succeeded[action] += 1
        return problems

    results = run_together(6, work)

    assert results == [[]] * 6
    assert set(succeeded) == {"group", "access"}, succeeded
    assert_members_equal_a_recount()


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_members_mix__grants_beside_group_deletes__none_fails(seed):
    """A grant names a group that another request deletes meanwhile: the grant either lands
    before the delete (which then removes its roles too) or answers 400 for the missing id,
    never a foreign-key error at commit; the delete never fails either. Before grants held
    the groups they name, 3 seeds of 3 met a 500 on one side or the other."""
    for project in PROJECTS:
        ProjectFactory(id=project)
    groups = GroupFactory.create_batch(12)
    users = UserFactory.create_batch(12)
    token = make_token(TokenType.ADMIN, name="members")[1]
    outcomes: Counter[str] = Counter()

    def work(index: int) -> list[str]:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=token)
        rng = random.Random(seed * 100 + index)
        problems = []
        for _ in range(10):
            if index % 3 == 0:
                action = "group-delete"
                response = client.delete(f"/api/admin/groups/{rng.choice(groups).pk}")
            else:
                action = "access"
                response = grant(
                    client,
                    rng.choice(PROJECTS),
                    [rng.choice([Role.OWNER, Role.MEMBER])],
                    rng.sample(users, rng.randrange(0, 3)),
                    rng.sample(groups, rng.randrange(0, 3)),
                )
            if response.status_code >= 500:
                problems.append(f"{action}: {response.status_code} {response.content[:200]!r}")
            outcomes[f"{action} {response.status_code}"] += 1
        return problems

    results = run_together(6, work)

    assert results == [[]] * 6, outcomes
    assert outcomes["access 200"], outcomes
    assert outcomes["access 400"], outcomes
    assert outcomes["group-delete 200"], outcomes
    assert_members_equal_a_recount()


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_members_mix__sso_sign_ins_beside_group_deletes__none_fails(seed):
    """SAML sign-ins join the groups their assertion maps to while other requests delete
    groups: a sign-in skips a group deleted before it, a delete removes the memberships added
    before it, and neither fails (no deadlock, no foreign-key error at commit)."""
    groups = [GroupFactory(mappings_sso=[f"idp-{index % 4}"]) for index in range(12)]
    users = UserFactory.create_batch(6)
    token = make_token(TokenType.ADMIN, name="members")[1]
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()

    def work(index: int) -> list[str]:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=token)
        rng = random.Random(seed * 100 + index)
        problems = []
        for _ in range(10):
            if index % 3 == 0:
                action = "group-delete"
                status = client.delete(f"/api/admin/groups/{rng.choice(groups).pk}").status_code
                if status >= 500:
                    problems.append(f"{action}: {status}")
            else:
                action, status = "sign-in", 200
                user = rng.choice(users)
                idp_groups = rng.sample(["idp-0", "idp-1", "idp-2", "idp-3"], rng.randrange(0, 4))
                try:
                    # As the sign-in does: the members' lock, the person, then the groups.
                    with members_write():
                        User.objects.select_for_update(no_key=True).get(pk=user.pk)
                        sync_sso_groups(user=user, idp_groups=idp_groups)
                except Exception as exc:  # a deadlock or a foreign-key error at commit
                    status = 500
                    problems.append(f"{action}: {exc!r}"[:200])
            with lock:
                outcomes[f"{action} {status}"] += 1
        return problems

    results = run_together(6, work)

    assert results == [[]] * 6, outcomes
    assert outcomes["sign-in 200"], outcomes
    assert outcomes["group-delete 200"], outcomes
    assert not GroupMembership.objects.exclude(group__in=Group.objects.all()).exists()


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
@pytest.mark.parametrize("seed", [1, 2])
def test_members_mix__member_writes_beside_admin_deletes_of_people__none_fails(seed):
    """Group updates and access grants name people whom the Django admin deletes meanwhile:
    a write either lands before the delete (which then removes what it added) or goes on
    without the person (400 for a grant naming them), never a deadlock or a foreign-key error
    at commit, and the admin's delete never fails either."""
    for project in PROJECTS:
        ProjectFactory(id=project)
    groups = GroupFactory.create_batch(3)
    people = UserFactory.create_batch(14)
    boss = UserFactory(email="boss@example.com", root_role_id=Role.ADMIN)
    token = make_token(TokenType.ADMIN, name="members")[1]
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()

    def work(index: int) -> list[str]:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=token)
        browser = Client()
        browser.force_login(User.objects.get(pk=boss.pk))
        rng = random.Random(seed * 100 + index)
        problems = []
        for _ in range(8):
            named = rng.sample(people, rng.randrange(1, 4))
            if index % 3 == 0:
                action = "admin-delete"
                response = browser.post(
                    f"/admin/flagadmin/user/{named[0].pk}/delete/", {"post": "yes"}
                )
            elif index % 3 == 1:
                action = "group"
                group = rng.choice(groups)
                response = put_members(client, group, named)
            else:
                action = "access"
                response = grant(client, rng.choice(PROJECTS), [Role.MEMBER], named)
            if response.status_code >= 500:
                problems.append(f"{action}: {response.status_code} {response.content[:200]!r}")
            with lock:
                outcomes[f"{action} {response.status_code}"] += 1
        return problems

    results = run_together(6, work)

    assert results == [[]] * 6, outcomes
    assert outcomes["admin-delete 302"], outcomes
    assert outcomes["group 200"], outcomes
    assert_members_equal_a_recount()


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_members_mix__every_members_writer_at_once__none_fails(seed):
    """SAML sign-ins, group updates, access grants and the Django admin's deletes of projects
    and groups, on the same groups, people and projects from 6 threads: two writers that add
    or remove the same membership, or one that deletes what another refers to, wait for each
    other under the members' lock and never deadlock or fail a foreign key at commit."""
    projects = [ProjectFactory(id=f"mix-{index}") for index in range(6)]
    groups = [GroupFactory(mappings_sso=[f"idp-{index % 3}"]) for index in range(6)]
    people = UserFactory.create_batch(6)
    boss = UserFactory(email="boss@example.com", root_role_id=Role.ADMIN)
    token = make_token(TokenType.ADMIN, name="members")[1]
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()

    def work(index: int) -> list[str]:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=token)
        browser = Client()
        browser.force_login(User.objects.get(pk=boss.pk))
        rng = random.Random(seed * 100 + index)
        problems = []
        for step in range(10):
            kind = rng.choice(["sign-in", "sign-in", "group", "group", "access", "admin-delete"])
            status = 200
            if kind == "sign-in":
                user = rng.choice(people)
                try:
                    with members_write():
                        User.objects.select_for_update(no_key=True).get(pk=user.pk)
                        sync_sso_groups(
                            user=user, idp_groups=rng.sample(["idp-0", "idp-1", "idp-2"], 2)
                        )
                except Exception as exc:  # a deadlock or a foreign-key error at commit
                    status = 500
                    problems.append(f"{kind}: {exc!r}"[:200])
            elif kind == "group":
                group = rng.choice(groups)
                named = rng.sample(people, rng.randrange(0, 4))
                status = put_members(client, group, named).status_code
            elif kind == "access":
                status = grant(
                    client,
                    rng.choice(projects).pk,
                    [rng.choice([Role.OWNER, Role.MEMBER])],
                    rng.sample(people, 2),
                    rng.sample(groups, 2),
                ).status_code
            elif rng.random() < 0.5:
                project = rng.choice(projects)
                status = browser.post(
                    f"/admin/projects/project/{project.pk}/delete/", {"post": "yes"}
                ).status_code
            else:
                group = rng.choice(groups)
                status = browser.post(
                    f"/admin/groups/group/{group.pk}/delete/", {"post": "yes"}
                ).status_code
            if status >= 500:
                problems.append(f"{kind} (step {step}): {status}")
            with lock:
                outcomes[f"{kind} {status}"] += 1
        return problems

    results = run_together(6, work)

    assert results == [[]] * 6, outcomes
    for kind in ("sign-in 200", "group 200", "admin-delete 302"):
        assert outcomes[kind], outcomes
    assert_members_equal_a_recount()
