"""Django admin of groups, and the groups shown on the user admin."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from flagadmin.core.models import Role
from groups.models import GroupMembership
from tests.factories import GroupFactory, GroupMembershipFactory, UserFactory
from tests.statements import trace


@pytest.fixture
def admin_browser(db) -> Client:
    client = Client()
    user = UserFactory(email="boss@example.com", root_role_id=Role.ADMIN)
    # As stored (the factory's unusable password is not saved): the session hash must match.
    client.user = type(user).objects.get(pk=user.pk)
    client.force_login(client.user)
    return client


def _groups_with_members(count: int) -> None:
    for _ in range(count):
        GroupMembershipFactory.create_batch(2, group=GroupFactory())


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured.captured_queries)


def test_group_changelist__user_count_column(admin_browser):
    group = GroupFactory(name="platform")
    GroupMembershipFactory.create_batch(3, group=group)

    response = admin_browser.get("/admin/groups/group/")

    assert response.status_code == 200
    row = next(r for r in response.context["cl"].result_list if r.pk == group.pk)
    assert row.user_count == 3
    assert b'class="field-user_count">3<' in response.content


def test_group_changelist__queries_do_not_grow(admin_browser):
    _groups_with_members(2)
    admin_browser.get("/admin/groups/group/")
    small = _queries(admin_browser, "/admin/groups/group/")
    _groups_with_members(30)

    assert _queries(admin_browser, "/admin/groups/group/") == small


def test_group_change_page__members_inline(admin_browser):
    group = GroupFactory(name="platform", mappings_sso=["sso-platform"])
    member = UserFactory(username="ada")
    GroupMembershipFactory(group=group, user=member, created_by="x@example.com")

    response = admin_browser.get(f"/admin/groups/group/{group.pk}/change/")

    assert response.status_code == 200
    content = response.content.decode()
    assert "sso-platform" in content
    assert "x@example.com" in content
    assert 'name="memberships-0-user"' in content


def member_added_form(group, newcomer) -> dict[str, str]:
    """The group's change form, unchanged but for `newcomer` added as a member."""
    return {
        "name": group.name,
        "description": "",
        "mappings_sso": "[]",
        "root_role": "",
        "scim_id": "",
        "memberships-TOTAL_FORMS": "1",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
        "memberships-0-id": "",
        "memberships-0-group": str(group.pk),
        "memberships-0-user": str(newcomer.pk),
    }


def test_group_change__member_added_by_hand__created_by_the_admin(admin_browser):
    group = GroupFactory(name="platform")
    newcomer = UserFactory()

    response = admin_browser.post(
        f"/admin/groups/group/{group.pk}/change/", member_added_form(group, newcomer)
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    membership = GroupMembership.objects.get(group=group)
    assert (membership.user_id, membership.created_by, membership.added_by_sso) == (
        newcomer.pk,
        "boss@example.com",
        False,
    )


def test_user_change_page__groups_inline(admin_browser):
    user = UserFactory()
    GroupMembershipFactory(user=user, group=GroupFactory(name="platform"))

    response = admin_browser.get(f"/admin/flagadmin/user/{user.pk}/change/")

    assert response.status_code == 200
    assert 'name="group_memberships-0-group"' in response.content.decode()


def test_user_changelist__groups_column_without_query_per_row(admin_browser):
    def add_people(count: int) -> None:
        for _ in range(count):
            GroupMembershipFactory(group=GroupFactory())

    add_people(2)
    admin_browser.get("/admin/flagadmin/user/")
    small = _queries(admin_browser, "/admin/flagadmin/user/")
    add_people(20)

    assert _queries(admin_browser, "/admin/flagadmin/user/") == small
    assert b"field-group_names" in admin_browser.get("/admin/flagadmin/user/").content


# --- widgets: lists of strings one per line, the SCIM id read-only ------------------------------


def test_group_admin__sso_mappings_one_per_line(db):
    from django.test import Client

    from flagadmin.core.models import Role
    from groups.models import Group
    from tests.factories import UserFactory

    client = Client()
    client.force_login(UserFactory(root_role_id=Role.ADMIN))

    response = client.post(
        "/admin/groups/group/add/",
        {
            "name": "qa",
            "description": "",
            "mappings_sso": "okta-qa\r\nQA team, Berlin\r\n\r\nokta-qa\r\n",
            "root_role": "",
            "memberships-TOTAL_FORMS": "0",
            "memberships-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    group = Group.objects.get(name="qa")
    assert group.mappings_sso == ["okta-qa", "QA team, Berlin"]
    assert group.description is None
    page = client.get(f"/admin/groups/group/{group.pk}/change/").content.decode()
    assert "okta-qa\nQA team, Berlin</textarea>" in page
    assert 'name="scim_id"' not in page  # synchronised from the identity provider: read-only


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: PostgreSQL")
def test_group_delete__locks_the_group_before_deleting_what_refers_to_it(admin_browser):
    group = GroupFactory(name="doomed")
    GroupMembershipFactory(group=group)

    with CaptureQueriesContext(connection) as captured:
        response = admin_browser.post(f"/admin/groups/group/{group.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302, response.content.decode()[:2000]
    statements = trace(captured)
    lock = statements.first(table="groups_group", lock="UPDATE")
    assert lock < statements.first(kind="DELETE"), statements


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: PostgreSQL")
def test_group_page__member_added__group_and_person_held_before_the_membership_is_written(
    admin_browser,
):
    group = GroupFactory(name="platform")
    newcomer = UserFactory()

    with CaptureQueriesContext(connection) as captured:
        response = admin_browser.post(
            f"/admin/groups/group/{group.pk}/change/", member_added_form(group, newcomer)
        )

    assert response.status_code == 302, response.content.decode()[:2000]
    statements = trace(captured)
    insert = statements.first(kind="INSERT", table="groups_groupmembership")
    assert insert < len(statements)
    assert statements.first(table="groups_group", lock="KEY SHARE") < insert
    assert statements.first(table="flagadmin_user", lock="KEY SHARE") < insert
    assert list(GroupMembership.objects.filter(group=group).values_list("user_id", flat=True)) == [
        newcomer.pk
    ]
