"""Every write the Django admin makes records an audit event, with the signed-in user as actor,
in the transaction of the change: adds, changes, deletes, bulk actions and inlines."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from features.models import (
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureStrategy,
    FeatureTag,
    TagType,
)
from flagadmin.core.admin_audit import json_safe
from flagadmin.core.models import ApiToken, AuditEvent, Role, TokenType
from groups.models import Group, GroupMembership
from tests.admin_forms import change_form_data
from tests.factories import (
    FeatureEnvironmentFactory,
    FeatureFactory,
    FeatureTagFactory,
    GroupFactory,
    GroupMembershipFactory,
    ProjectFactory,
    TagFactory,
    UserFactory,
    make_token,
)


@pytest.fixture
def operator(db):
    return UserFactory(username="operator", root_role_id=Role.ADMIN)


@pytest.fixture
def staff(operator) -> Client:
    client = Client()
    client.force_login(operator)
    return client


def recorded(**match) -> list[dict]:
    """The events (oldest first) as the assertions compare them."""
    return [
        {
            "type": event.type,
            "created_by": event.created_by,
            "created_by_user_id": event.created_by_user_id,
            "project": event.project,
            "feature_name": event.feature_name,
            "environment": event.environment,
            "data": event.data,
            "pre_data": event.pre_data,
        }
        for event in AuditEvent.objects.filter(**match).order_by("id")
    ]


def by_operator(operator, event_type: str, **fields) -> dict:
    return {
        "type": event_type,
        "created_by": "operator@example.com",
        "created_by_user_id": operator.pk,
        "project": None,
        "feature_name": None,
        "environment": None,
        "data": None,
        "pre_data": None,
        **fields,
    }


# --- add, change, delete (the mechanism every admin shares) -------------------------------


def test_admin_add__records_created_event(staff, operator):
    response = staff.post(
        "/admin/features/tagtype/add/", {"name": "team", "description": "Owning team"}
    )

    assert response.status_code == 302
    created_at = TagType.objects.get(name="team").created_at
    assert recorded() == [
        by_operator(
            operator,
            "tag-type-created",
            data={
                "name": "team",
                "description": "Owning team",
                "icon": None,
                "color": None,
                "createdAt": json_safe(created_at),
            },
        )
    ]


def test_admin_change__group_rename_and_member_inline__records_group_updated(staff, operator):
    group = GroupFactory(name="red", mappings_sso=["okta red"])
    member = GroupMembershipFactory(group=group).user
    newcomer = UserFactory()
    page = staff.get(f"/admin/groups/group/{group.pk}/change/")
    data = change_form_data(
        page,
        name="blue",
        **{
            "memberships-TOTAL_FORMS": "2",
            "memberships-1-user": str(newcomer.pk),
            "memberships-1-group": str(group.pk),
        },
    )

    response = staff.post(f"/admin/groups/group/{group.pk}/change/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    [event] = recorded()
    assert event["type"] == "group-updated"
    assert (event["created_by"], event["created_by_user_id"]) == (
        "operator@example.com",
        operator.pk,
    )
    assert event["pre_data"]["name"] == "red"
    assert event["data"]["name"] == "blue"
    assert event["pre_data"]["users"] == [member.pk]
    assert event["data"]["users"] == sorted([member.pk, newcomer.pk])
    assert event["data"]["mappingsSSO"] == ["okta red"]


def test_admin_change__nothing_changed__records_nothing(staff):
    group = GroupFactory(name="same")
    page = staff.get(f"/admin/groups/group/{group.pk}/change/")

    response = staff.post(f"/admin/groups/group/{group.pk}/change/", change_form_data(page))

    assert response.status_code == 302
    assert recorded() == []


def test_admin_delete__records_deleted_event_with_pre_data(staff, operator):
    group = GroupFactory(name="gone")

    response = staff.post(f"/admin/groups/group/{group.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    [event] = recorded()
    assert event["type"] == "group-deleted"
    assert event["pre_data"]["name"] == "gone"
    assert event["data"] is None
    assert event["created_by_user_id"] == operator.pk


def test_admin_change__event_commits_with_the_change_or_not_at_all(staff, monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("audit store down")

    monkeypatch.setattr("flagadmin.core.admin_audit.record_event", fail)

    with pytest.raises(RuntimeError):
        staff.post("/admin/features/tagtype/add/", {"name": "team"})

    assert not TagType.objects.filter(name="team").exists()


# --- bulk actions ------------------------------------------------------------------------


def test_admin_bulk_delete__records_one_event_per_row(staff):
    first, second = GroupFactory(name="g1"), GroupFactory(name="g2")

    response = staff.post(
        "/admin/groups/group/",
        {"action": "delete_selected", "_selected_action": [first.pk, second.pk], "post": "yes"},
    )

    assert response.status_code == 302
    assert [(e["type"], e["pre_data"]["name"]) for e in recorded()] == [
        ("group-deleted", "g1"),
        ("group-deleted", "g2"),
    ]
    assert not Group.objects.exists()


def test_admin_bulk_revoke__records_token_update(staff, operator):
    make_token(TokenType.CLIENT, projects=["default"], name="sdk")
    token = ApiToken.objects.get(name="sdk")

    response = staff.post(
        "/admin/flagadmin/apitoken/", {"action": "revoke", "_selected_action": [token.pk]}
    )

    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    [event] = recorded()
    assert event["type"] == "api-token-updated"
    assert event["pre_data"]["revokedAt"] is None
    assert event["data"]["revokedAt"] is not None
    assert event["data"]["tokenName"] == "sdk"
    assert event["created_by_user_id"] == operator.pk


def test_admin_bulk_enable_in_environment__records_feature_environment_enabled(staff, operator):
    flag = FeatureFactory(name="checkout")
    FeatureEnvironmentFactory(feature=flag, environment_id="production", enabled=False)
    FeatureTagFactory(feature=flag, tag=TagFactory(value="team-red"))

    response = staff.post(
        "/admin/features/feature/",
        {"action": "enable_in_production", "_selected_action": ["checkout"]},
    )

    assert response.status_code == 302
    assert FeatureEnvironment.objects.get(feature=flag, environment_id="production").enabled
    # The flag had no strategy there: Unleash's default (flexibleRollout 100 %) comes first.
    strategy = FeatureStrategy.objects.get(feature_environment__feature=flag)
    assert recorded() == [
        by_operator(
            operator,
            "feature-strategy-add",
            project="default",
            feature_name="checkout",
            environment="production",
            data={
                "id": str(strategy.id),
                "name": "flexibleRollout",
                "title": None,
                "disabled": False,
                "constraints": [],
                "parameters": {"rollout": "100", "groupId": "checkout", "stickiness": "default"},
                "variants": [],
                "sortOrder": 0,
                "segments": [],
            },
        ),
        by_operator(
            operator,
            "feature-environment-enabled",
            project="default",
            feature_name="checkout",
            environment="production",
        ),
    ]
    team_red = [{"type": "simple", "value": "team-red"}]
    assert [event.tags for event in AuditEvent.objects.order_by("id")] == [team_red, team_red]


def test_admin_bulk_disable__skips_flags_without_that_environment_and_archived(staff, operator):
    on = FeatureFactory(name="on")
    FeatureEnvironmentFactory(feature=on, environment_id="production", enabled=True)
    FeatureFactory(name="elsewhere")  # its project does not use production
    FeatureFactory(name="archived", archived_at=timezone.now())

    # Archived flags are listed (and so selectable) when the list is asked for all of them.
    response = staff.post(
        "/admin/features/feature/?archived=all",
        {"action": "disable_in_production", "_selected_action": ["on", "elsewhere", "archived"]},
        follow=True,
    )

    assert [str(m) for m in response.context["messages"]] == [
        "Disabled 1 flag(s) in production; 2 skipped (archived, or production not used by the"
        " flag's project)."
    ]
    assert [(e["type"], e["feature_name"]) for e in recorded()] == [
        ("feature-environment-disabled", "on")
    ]


# --- inlines -----------------------------------------------------------------------------


def _flag_page(staff, name: str):
    return staff.get(f"/admin/features/feature/{name}/change/")


def test_admin_inline__flag_environment_toggle_and_variants(staff, operator):
    flag = FeatureFactory(name="inline")
    FeatureEnvironmentFactory(feature=flag, environment_id="production", enabled=False)
    variants = [{"name": "a", "weight": 1000, "weightType": "variable", "stickiness": "default"}]
    data = change_form_data(
        _flag_page(staff, "inline"),
        **{
            "environments-0-enabled": "on",
            "environments-0-variants": str(variants).replace("'", '"'),
        },
    )

    response = staff.post("/admin/features/feature/inline/change/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    scope = {"project": "default", "feature_name": "inline", "environment": "production"}
    assert recorded() == [
        by_operator(
            operator,
            "feature-environment-variants-updated",
            data={"variants": variants},
            pre_data={"variants": []},
            **scope,
        ),
        # No strategy there yet: Unleash's default comes with the switch.
        by_operator(
            operator,
            "feature-strategy-add",
            data=AuditEvent.objects.get(type="feature-strategy-add").data,
            **scope,
        ),
        by_operator(operator, "feature-environment-enabled", **scope),
    ]
    assert AuditEvent.objects.get(type="feature-strategy-add").data["parameters"] == {
        "rollout": "100",
        "groupId": "inline",
        "stickiness": "default",
    }


def test_admin_inline__flag_tags_added_and_removed(staff, operator):
    flag = FeatureFactory(name="tagged")
    FeatureTagFactory(feature=flag, tag=TagFactory(value="old"))
    new_tag = TagFactory(value="new")
    data = change_form_data(
        _flag_page(staff, "tagged"),
        **{
            "feature_tags-0-DELETE": "on",
            "feature_tags-TOTAL_FORMS": "2",
            "feature_tags-1-tag": str(new_tag.pk),
            "feature_tags-1-feature": "tagged",
        },
    )

    response = staff.post("/admin/features/feature/tagged/change/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    scope = {"project": "default", "feature_name": "tagged"}
    assert recorded() == [
        by_operator(
            operator, "feature-untagged", pre_data={"type": "simple", "value": "old"}, **scope
        ),
        by_operator(operator, "feature-tagged", data={"type": "simple", "value": "new"}, **scope),
    ]
    assert list(FeatureTag.objects.filter(feature=flag).values_list("tag__value", flat=True)) == [
        "new"
    ]


def test_admin_inline__flag_dependency_added(staff, operator):
    FeatureFactory(name="parent")
    FeatureFactory(name="child")
    data = change_form_data(
        _flag_page(staff, "child"),
        **{
            "dependencies-TOTAL_FORMS": "1",
            "dependencies-0-parent": "parent",
            "dependencies-0-child": "child",
            "dependencies-0-enabled": "on",
            "dependencies-0-variants": "blue\nred",
        },
    )

    response = staff.post("/admin/features/feature/child/change/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    assert FeatureDependency.objects.filter(child_id="child", parent_id="parent").exists()
    assert recorded() == [
        by_operator(
            operator,
            "feature-dependency-added",
            project="default",
            feature_name="child",
            data={"feature": "parent", "enabled": True, "variants": ["blue", "red"]},
        )
    ]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        pytest.param("archived-parent", "No active feature parent exists", id="archived-parent"),
        # Unleash 8.2's own sentences (its dependent-features service).
        pytest.param(
            "parent-is-a-child",
            "Transitive dependency detected. Cannot add a dependency to the feature that has "
            "parent dependency.",
            id="chain-above",
        ),
        pytest.param(
            "child-is-a-parent",
            "Transitive dependency detected. Cannot add a dependency to the feature that other "
            "features depend on.",
            id="chain-below",
        ),
        pytest.param(
            "parent-elsewhere",
            "Cannot add the dependency. Both the parent and the child feature must belong to "
            'project "default".',
            id="parent-in-another-project",
        ),
    ],
)
def test_admin_inline__flag_dependency_unleash_refuses__form_error(staff, setup, message):
    FeatureFactory(name="parent")
    FeatureFactory(name="child")
    FeatureFactory(name="other")
    if setup == "archived-parent":
        Feature.objects.filter(name="parent").update(archived_at=timezone.now())
    elif setup == "parent-is-a-child":
        FeatureDependency.objects.create(parent_id="other", child_id="parent")
    elif setup == "parent-elsewhere":
        Feature.objects.filter(name="parent").update(project=ProjectFactory(id="elsewhere"))
    else:
        FeatureDependency.objects.create(parent_id="child", child_id="other")
    data = change_form_data(
        _flag_page(staff, "child"),
        **{
            "dependencies-TOTAL_FORMS": "1",
            "dependencies-0-parent": "parent",
            "dependencies-0-child": "child",
            "dependencies-0-enabled": "on",
        },
    )

    response = staff.post("/admin/features/feature/child/change/", data)

    assert response.status_code == 200
    assert message in response.content.decode().replace("&quot;", '"')
    assert not FeatureDependency.objects.filter(child_id="child", parent_id="parent").exists()


def test_set_feature_dependency__parent_archived_meanwhile__refused(operator):
    # The form checked an active parent; the service checks again under the flags' locks.
    from features.dependency_services import set_feature_dependency
    from flagadmin.core.errors import InvalidOperationError

    parent, child = FeatureFactory(name="parent"), FeatureFactory(name="child")
    Feature.objects.filter(name="parent").update(archived_at=timezone.now())

    with pytest.raises(InvalidOperationError, match="No active feature parent exists"):
        set_feature_dependency(child=child, parent=parent, enabled=True, variants=[], actor=None)

    assert not FeatureDependency.objects.exists()


def test_admin_inline__membership_from_user_page__records_group_user_added(staff, operator):
    user = UserFactory(username="someone")
    group = GroupFactory(name="ops")
    data = change_form_data(
        staff.get(f"/admin/flagadmin/user/{user.pk}/change/"),
        **{
            "group_memberships-TOTAL_FORMS": "1",
            "group_memberships-0-group": str(group.pk),
            "group_memberships-0-user": str(user.pk),
        },
    )

    response = staff.post(f"/admin/flagadmin/user/{user.pk}/change/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    assert GroupMembership.objects.filter(group=group, user=user).exists()
    assert recorded() == [
        by_operator(operator, "group-user-added", data={"groupId": group.pk, "userId": user.pk})
    ]


def test_admin_inline__membership_removed_from_user_page__records_group_user_removed(
    staff, operator
):
    user = UserFactory(username="someone")
    group = GroupFactory(name="ops")
    GroupMembershipFactory(group=group, user=user)
    data = change_form_data(
        staff.get(f"/admin/flagadmin/user/{user.pk}/change/"),
        **{"group_memberships-0-DELETE": "on"},
    )

    response = staff.post(f"/admin/flagadmin/user/{user.pk}/change/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    assert not GroupMembership.objects.filter(group=group, user=user).exists()
    assert recorded() == [
        by_operator(
            operator, "group-user-removed", pre_data={"groupId": group.pk, "userId": user.pk}
        )
    ]


# --- deleting flags ------------------------------------------------------------------------


def test_admin_delete_flag__only_archived__records_feature_deleted(staff, operator):
    FeatureFactory(name="active")
    FeatureFactory(name="retired", archived_at=timezone.now(), description="old")

    refused = staff.post("/admin/features/feature/active/delete/", {"post": "yes"})
    response = staff.post("/admin/features/feature/retired/delete/", {"post": "yes"})

    assert refused.status_code == 403
    assert response.status_code == 302
    assert list(Feature.objects.values_list("name", flat=True)) == ["active"]
    assert recorded() == [
        by_operator(
            operator,
            "feature-deleted",
            project="default",
            feature_name="retired",
            pre_data={
                "name": "retired",
                "description": "old",
                "type": "release",
                "project": "default",
                "stale": False,
                "impressionData": False,
                "archived": True,
            },
        )
    ]


# --- a flag's stale state ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stale_before", "posted", "event"),
    [
        pytest.param(False, {"stale": "on"}, "feature-stale-on", id="on"),
        pytest.param(True, {}, "feature-stale-off", id="off"),
    ],
)
def test_admin_change_flag__stale__records_stale_event_as_unleash(
    staff, operator, stale_before, posted, event
):
    FeatureFactory(name="ageing", stale=stale_before)
    data = {k: v for k, v in change_form_data(_flag_page(staff, "ageing")).items() if k != "stale"}

    response = staff.post("/admin/features/feature/ageing/change/", {**data, **posted})

    assert response.status_code == 302, response.content.decode()[:3000]
    scope = {"project": "default", "feature_name": "ageing"}
    assert [e["type"] for e in recorded()] == ["feature-metadata-updated", event]
    assert recorded(type=event) == [by_operator(operator, event, **scope)]


def test_admin_change_flag__description_only__no_stale_event(staff):
    FeatureFactory(name="ageing", stale=True)
    data = change_form_data(_flag_page(staff, "ageing"), description="reworded")

    response = staff.post("/admin/features/feature/ageing/change/", data)

    assert response.status_code == 302, response.content.decode()[:3000]
    assert [e["type"] for e in recorded()] == ["feature-metadata-updated"]


# --- the same mechanism on every other admin -----------------------------------------------


def _custom_role():
    return Role.objects.create(name="auditor", type="root-custom")


def _environment():
    from projects.models import Environment

    return Environment.objects.create(name="staging", type="test")


def _segment():
    from features.models import Segment

    return Segment.objects.create(name="beta-users")


def _project():

    return ProjectFactory(id="spare")


def _leaver():
    return UserFactory(username="leaver")


def _token():
    make_token(TokenType.ADMIN, name="old")
    return ApiToken.objects.get(name="old")


@pytest.mark.parametrize(
    ("make", "url", "event_type", "pre_data_name"),
    [
        pytest.param(_custom_role, "flagadmin/role", "role-deleted", "auditor", id="role"),
        pytest.param(_token, "flagadmin/apitoken", "api-token-deleted", None, id="api-token"),
        pytest.param(
            lambda: UserFactory(username="leaver"),
            "flagadmin/user",
            "user-deleted",
            None,
            id="user",
        ),
        pytest.param(
            _environment, "projects/environment", "environment-deleted", "staging", id="env"
        ),
        pytest.param(_project, "projects/project", "project-deleted", "Spare", id="project"),
        pytest.param(_segment, "features/segment", "segment-deleted", "beta-users", id="segment"),
        pytest.param(
            lambda: TagFactory(value="gone"), "features/tag", "tag-deleted", None, id="tag"
        ),
    ],
)
def test_admin_delete__every_admin_records_its_kind(
    staff, operator, make, url, event_type, pre_data_name
):
    obj = make()

    response = staff.post(f"/admin/{url}/{obj.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302, response.content.decode()[:2000]
    assert not type(obj).objects.filter(pk=obj.pk).exists()
    [event] = recorded(type=event_type)
    assert event["created_by_user_id"] == operator.pk
    # The key: an id, or the name where the name is the key (environments).
    assert event["pre_data"].get("id", event["pre_data"].get("name")) == obj.pk
    if pre_data_name is not None:
        assert event["pre_data"]["name"] == pre_data_name


def test_admin_change__strategy__records_feature_strategy_update_with_scope(staff, operator):
    from tests.factories import FeatureStrategyFactory

    state = FeatureEnvironmentFactory(
        feature=FeatureFactory(name="rolled"), environment_id="production"
    )
    strategy = FeatureStrategyFactory(feature_environment=state, title="before")
    url = f"/admin/features/featurestrategy/{strategy.pk}/change/"
    data = change_form_data(staff.get(url), title="after")

    response = staff.post(url, data)

    assert response.status_code == 302, response.content.decode()[:3000]
    [event] = recorded()
    assert (event["type"], event["project"], event["feature_name"], event["environment"]) == (
        "feature-strategy-update",
        "default",
        "rolled",
        "production",
    )
    assert (event["pre_data"]["title"], event["data"]["title"]) == ("before", "after")
    assert event["created_by_user_id"] == operator.pk


def test_admin_change__user_password__records_user_updated_without_the_hash(staff, operator):
    user = UserFactory(username="resetme")
    url = f"/admin/flagadmin/user/{user.pk}/password/"

    response = staff.post(
        url,
        {
            "usable_password": "true",
            "password1": "a long new passphrase",
            "password2": "a long new passphrase",
        },
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    [event] = recorded()
    assert event["type"] == "user-updated"
    assert (event["pre_data"]["passwordSet"], event["data"]["passwordSet"]) == (False, True)
    assert event["pre_data"]["passwordVersion"] != event["data"]["passwordVersion"]
    user.refresh_from_db()
    assert user.password not in str(event["data"])
