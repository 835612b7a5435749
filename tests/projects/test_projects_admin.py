"""Django admin of projects and environments."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from flagadmin.core.models import AuditEvent, Role
from projects.models import Environment, Project, ProjectRoleAssignment
from tests.admin_forms import change_form_data
from tests.factories import (
    FeatureFactory,
    GroupFactory,
    GroupMembershipFactory,
    ProjectFactory,
    ProjectRoleAssignmentFactory,
    UserFactory,
)
from tests.statements import trace

CHANGELIST = "/admin/projects/project/"


@pytest.fixture
def admin_browser(db) -> Client:
    client = Client()
    user = UserFactory(email="boss@example.com", root_role_id=Role.ADMIN)
    client.user = type(user).objects.get(pk=user.pk)
    client.force_login(client.user)
    return client


def rows(response) -> dict:
    assert response.status_code == 200
    return {project.pk: project for project in response.context["cl"].result_list}


def build(count: int) -> None:
    group = GroupFactory()
    GroupMembershipFactory.create_batch(2, group=group)
    for _ in range(count):
        project = ProjectFactory()
        ProjectRoleAssignmentFactory(project=project, user=UserFactory())
        ProjectRoleAssignmentFactory(project=project, role_id=Role.MEMBER, group=group)
        FeatureFactory.create_batch(2, project_id=project.pk)


def queries_for(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)


def test_project_changelist__figures_columns(admin_browser):
    project = ProjectFactory(id="shop", name="Shop")
    old = timezone.now() - timedelta(days=50)
    FeatureFactory(project_id="shop", stale=True)
    FeatureFactory(project_id="shop", type="release", created_at=old)
    FeatureFactory(project_id="shop")
    FeatureFactory(project_id="shop")
    FeatureFactory(project_id="shop", archived_at=timezone.now())
    group = GroupFactory()
    GroupMembershipFactory(group=group)
    owner = UserFactory()
    ProjectRoleAssignmentFactory(project=project, user=owner)
    ProjectRoleAssignmentFactory(project=project, role_id=Role.MEMBER, group=group)

    response = admin_browser.get(CHANGELIST)

    figures = rows(response)["shop"].figures
    counts = ("featureCount", "staleFeatureCount", "potentiallyStaleFeatureCount", "memberCount")
    assert [figures[key] for key in counts] == [4, 1, 1, 2]
    content = response.content.decode()
    assert 'class="field-feature_count">4<' in content
    assert 'class="field-member_count">2<' in content
    assert 'class="field-health">50%<' in content


def test_project_changelist__figures__as_the_api_lists_them(admin_browser, admin_client):
    build(3)
    FeatureFactory(project_id="default", stale=True)

    shown = {pk: project.figures for pk, project in rows(admin_browser.get(CHANGELIST)).items()}
    shown = json.loads(JSONRenderer().render(shown))  # datetimes as the API writes them

    listed = admin_client.get("/api/admin/projects").json()["projects"]
    assert shown == {project["id"]: project for project in listed}


def test_project_changelist__queries_do_not_grow(admin_browser):
    build(2)
    small = queries_for(admin_browser, CHANGELIST)
    build(20)

    assert queries_for(admin_browser, CHANGELIST) == small


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("?archived=yes", {"gone"}),
        ("?archived=no", {"default", "kept"}),
        ("?mode__exact=private", {"kept"}),
        ("?q=gon", {"gone"}),
        ("?q=Kept+Name", {"kept"}),
    ],
)
def test_project_changelist__filters_and_search(admin_browser, query, expected):
    ProjectFactory(id="gone", name="Gone", archived_at=timezone.now())
    ProjectFactory(id="kept", name="Kept Name", mode="private")

    assert set(rows(admin_browser.get(CHANGELIST + query))) == expected


def test_project_change_page__members_and_environments_inline(admin_browser):
    project = ProjectFactory(id="shop")
    ProjectRoleAssignmentFactory(project=project, user=UserFactory(username="ada"))

    response = admin_browser.get(f"{CHANGELIST}shop/change/")

    assert response.status_code == 200
    content = response.content.decode()
    assert 'name="role_assignments-0-user"' in content
    assert 'name="project_environments-0-environment"' in content
    role_choices = response.context["inline_admin_formsets"][0].formset.forms[0]
    assert {r.pk for r in role_choices.fields["role"].queryset} == {Role.OWNER, Role.MEMBER}


def shop_form_adding_roles(*roles: tuple) -> dict[str, str]:
    """Project `shop`'s change form, unchanged but for new roles: (role id, user or None,
    group or None) each."""
    form = {
        "name": "Shop",
        "description": "",
        "mode": "open",
        "default_stickiness": "default",
        "archived_at_0": "",
        "archived_at_1": "",
        "role_assignments-TOTAL_FORMS": str(len(roles)),
        "role_assignments-INITIAL_FORMS": "0",
        "project_environments-TOTAL_FORMS": "0",
        "project_environments-INITIAL_FORMS": "0",
    }
    for index, (role, user, group) in enumerate(roles):
        form[f"role_assignments-{index}-role"] = str(role)
        form[f"role_assignments-{index}-user"] = str(user.pk) if user else ""
        form[f"role_assignments-{index}-group"] = str(group.pk) if group else ""
    return form


def test_project_change__member_added_inline(admin_browser):
    project = ProjectFactory(id="shop", name="Shop", with_environments=False)
    newcomer = UserFactory()

    response = admin_browser.post(
        f"{CHANGELIST}shop/change/", shop_form_adding_roles((Role.MEMBER, newcomer, None))
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    assert ProjectRoleAssignment.objects.filter(
        project=project, user=newcomer, role_id=Role.MEMBER
    ).exists()


@pytest.mark.parametrize("name", ["Sh\x01op", "Shop\nfloor", "Shop\x7f"])
def test_project_name_with_control_character__refused_as_the_api_refuses_it(admin_browser, name):
    ProjectFactory(id="shop", name="Shop", with_environments=False)
    add, change = f"{CHANGELIST}add/", f"{CHANGELIST}shop/change/"
    new = {"id": "new", "name": name, "mode": "open", "default_stickiness": "default"}

    added = admin_browser.post(add, {**new, **_empty_inlines(admin_browser, add)})
    renamed = admin_browser.post(change, change_form_data(admin_browser.get(change), name=name))

    for response in (added, renamed):
        assert response.status_code == 200
        assert response.context["adminform"].form.errors == {
            "name": ["Must not contain control characters (\\u0000 to \\u001f, \\u007f)."]
        }
    assert list(Project.objects.values_list("id", "name")) == [
        ("default", "Default"),
        ("shop", "Shop"),
    ]
    assert not AuditEvent.objects.filter(type__startswith="project-").exists()


URL_FRIENDLY = (
    "Must be URL friendly: only the characters A-Z a-z 0-9 - _ . ! ~ * ' ( ), and not . or .."
)


@pytest.mark.parametrize("key", ["sh\x01op", "sh\nop", "sh op", "..", "shop/floor"])
def test_project_id_and_environment_name__not_url_friendly__refused_as_the_api_refuses_them(
    admin_browser, key
):
    # Each ends up in URLs and in client tokens ("<project>:<environment>.<secret>").
    project_add, environment_add = f"{CHANGELIST}add/", "/admin/projects/environment/add/"
    project = {"id": key, "name": "Shop", "mode": "open", "default_stickiness": "default"}
    environment = {
        "name": key,
        "type": "development",
        "sort_order": "1",
        "enabled": "on",
        "created_at_0": "2026-01-01",
        "created_at_1": "00:00:00",
    }

    added_project = admin_browser.post(
        project_add, {**project, **_empty_inlines(admin_browser, project_add)}
    )
    added_environment = admin_browser.post(environment_add, environment)

    assert added_project.status_code == added_environment.status_code == 200
    assert added_project.context["adminform"].form.errors == {"id": [URL_FRIENDLY]}
    assert added_environment.context["adminform"].form.errors == {"name": [URL_FRIENDLY]}
    assert list(Project.objects.values_list("id", flat=True)) == ["default"]
    assert sorted(Environment.objects.values_list("name", flat=True)) == [
        "development",
        "production",
    ]


def test_project_id_and_environment_name__url_friendly__added(admin_browser):
    project_add, environment_add = f"{CHANGELIST}add/", "/admin/projects/environment/add/"
    project = {"id": "it's-(ok)!~*", "name": "Ok", "mode": "open", "default_stickiness": "default"}

    added_project = admin_browser.post(
        project_add, {**project, **_empty_inlines(admin_browser, project_add)}
    )
    added_environment = admin_browser.post(
        environment_add,
        {
            "name": "pre.prod_1",
            "type": "development",
            "sort_order": "1",
            "created_at_0": "2026-01-01",
            "created_at_1": "00:00:00",
        },
    )

    assert added_project.status_code == added_environment.status_code == 302
    assert Project.objects.filter(pk="it's-(ok)!~*").exists()
    assert Environment.objects.filter(pk="pre.prod_1").exists()


def _empty_inlines(client: Client, url: str) -> dict[str, int]:
    data = {}
    for inline in client.get(url).context["inline_admin_formsets"]:
        prefix = inline.formset.prefix
        data |= {f"{prefix}-TOTAL_FORMS": 0, f"{prefix}-INITIAL_FORMS": 0}
    return data


def test_environment_changelist(admin_browser):
    response = admin_browser.get("/admin/projects/environment/")

    assert response.status_code == 200
    listed = {env.pk: env.project_count for env in response.context["cl"].result_list}
    assert listed == {"development": 1, "production": 1}


def test_project_admin__viewer__no_access(db):
    client = Client()
    viewer = UserFactory(root_role_id=Role.VIEWER)
    client.force_login(type(viewer).objects.get(pk=viewer.pk))

    response = client.get(CHANGELIST)

    assert response.status_code == 302


@pytest.mark.skipif(connection.vendor != "postgresql", reason="row locks: PostgreSQL")
def test_project_change__roles_added_inline__holders_held_before_the_roles_are_written(
    admin_browser,
):
    ProjectFactory(id="shop", name="Shop", with_environments=False)
    newcomer, team = UserFactory(), GroupFactory()

    with CaptureQueriesContext(connection) as captured:
        response = admin_browser.post(
            f"{CHANGELIST}shop/change/",
            shop_form_adding_roles((Role.MEMBER, newcomer, None), (Role.OWNER, None, team)),
        )

    assert response.status_code == 302, response.content.decode()[:2000]
    statements = trace(captured)
    insert = statements.first(kind="INSERT", table="projects_projectroleassignment")
    assert insert < len(statements)
    assert statements.first(table="groups_group", lock="KEY SHARE") < insert, statements
    assert statements.first(table="flagadmin_user", lock="KEY SHARE") < insert, statements
    assert ProjectRoleAssignment.objects.filter(project_id="shop").count() == 2
