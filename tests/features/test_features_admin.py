"""The Django admin of flags: lists with filters and search, the change page with its inlines and
audit events, creation and archiving through the same services as the API."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.utils import timezone

from features.models import (
    Feature,
    FeatureDependency,
    FeatureEnvironment,
    FeatureLifecycleStage,
    TagType,
)
from flagadmin.core.models import AuditEvent, Role
from tests.factories import (
    AuditEventFactory,
    FeatureEnvironmentFactory,
    FeatureFactory,
    FeatureTagFactory,
    ProjectFactory,
    TagFactory,
    UserFactory,
)
from tests.statements import trace

CHANGELIST = "/admin/features/feature/"


@pytest.fixture
def staff(db) -> Client:
    client = Client()
    client.force_login(UserFactory(root_role_id=Role.ADMIN))
    return client


@pytest.mark.parametrize(
    "query",
    [
        pytest.param("", id="active-by-default"),
        pytest.param("?archived=all", id="all"),
        pytest.param("?project__id__exact=default", id="by-project"),
        pytest.param("?type__exact=release", id="by-type"),
        pytest.param("?archived=yes", id="archived"),
        pytest.param("?archived=no", id="active"),
        pytest.param("?stale__exact=1", id="stale"),
        pytest.param("?q=alpha", id="search"),
    ],
)
def test_feature_admin__changelist_filters(staff, query):
    FeatureFactory(name="alpha", type="release")
    FeatureFactory(name="beta", archived_at=timezone.now(), stale=True, type="kill-switch")

    response = staff.get(CHANGELIST + query)

    assert response.status_code == 200
    shown = {feature.name for feature in response.context["cl"].result_list}
    expected = {
        "": {"alpha"},
        "?archived=all": {"alpha", "beta"},
        "?project__id__exact=default": {"alpha"},
        "?type__exact=release": {"alpha"},
        "?archived=yes": {"beta"},
        "?archived=no": {"alpha"},
        "?stale__exact=1": set(),
        "?q=alpha": {"alpha"},
    }[query]
    assert shown == expected


def test_feature_admin__change_page_shows_inlines_and_events(staff):
    flag = FeatureFactory(name="inspected")
    FeatureEnvironmentFactory(feature=flag, environment_id="production")
    FeatureTagFactory(feature=flag, tag=TagFactory(value="team-blue"))
    AuditEventFactory(feature_name="inspected", type="feature-created", created_by="someone")
    AuditEventFactory(feature_name="other", type="feature-created", created_by="nobody")

    response = staff.get(f"{CHANGELIST}inspected/change/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "production" in page
    assert "team-blue" in page
    assert "someone" in page
    assert "nobody" not in page
    assert "/admin/flagadmin/auditevent/?feature_name=inspected" in page


def test_feature_admin__changelist__archived_filter_choices(staff):
    response = staff.get(CHANGELIST)

    [archived] = [f for f in response.context["cl"].filter_specs if f.title == "archived"]
    choices = list(archived.choices(response.context["cl"]))
    assert [(c["display"], c["selected"]) for c in choices] == [
        ("Active", True),
        ("Archived", False),
        ("All", False),
    ]
    assert choices[2]["query_string"] == "?archived=all"


def test_feature_admin__add_form__default_project_preselected(staff):
    response = staff.get(f"{CHANGELIST}add/")

    assert response.context["adminform"].form.initial["project"] == "default"
    assert '<option value="default" selected>' in response.content.decode()


def test_feature_admin__add_form__project_from_query_wins(staff):
    ProjectFactory(id="payments")

    response = staff.get(f"{CHANGELIST}add/?project=payments")

    assert response.context["adminform"].form.initial["project"] == "payments"


def test_feature_admin__add_form__no_default_project__nothing_preselected(staff):
    from projects.models import Project

    Project.objects.filter(pk="default").update(archived_at=timezone.now())

    response = staff.get(f"{CHANGELIST}add/")

    assert "project" not in response.context["adminform"].form.initial


def test_feature_admin__add__goes_through_the_service(staff):
    response = staff.post(
        f"{CHANGELIST}add/",
        {
            "name": "from.admin",
            "project": "default",
            "type": "release",
            "description": "",
            "feature_tags-TOTAL_FORMS": "0",
            "feature_tags-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    flag = Feature.objects.get(name="from.admin")
    assert flag.description is None
    assert FeatureEnvironment.objects.filter(feature=flag).count() == 2
    assert FeatureLifecycleStage.objects.filter(feature=flag, stage="initial").exists()
    assert AuditEvent.objects.filter(feature_name="from.admin", type="feature-created").exists()


def test_feature_admin__add__name_rule_applies(staff):
    response = staff.post(
        f"{CHANGELIST}add/",
        {
            "name": "not url friendly",
            "project": "default",
            "type": "release",
            "feature_tags-TOTAL_FORMS": "0",
            "feature_tags-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 200
    assert "URL friendly" in response.content.decode()
    assert not Feature.objects.filter(name="not url friendly").exists()


def test_feature_admin__add__archived_project_refused_in_the_form(staff):
    ProjectFactory(id="retired", archived_at=timezone.now())

    page = staff.get(f"{CHANGELIST}add/").content.decode()
    response = staff.post(
        f"{CHANGELIST}add/",
        {
            "name": "into.retired",
            "project": "retired",
            "type": "release",
            "feature_tags-TOTAL_FORMS": "0",
            "feature_tags-INITIAL_FORMS": "0",
        },
    )

    assert 'value="retired"' not in page
    assert response.status_code == 200
    assert "Select a valid choice" in response.content.decode()
    assert not Feature.objects.filter(name="into.retired").exists()


def test_feature_admin__archive_action(staff):
    FeatureFactory(name="old")

    response = staff.post(CHANGELIST, {"action": "archive_selected", "_selected_action": ["old"]})

    assert response.status_code == 302
    assert Feature.objects.get(name="old").archived_at is not None
    assert AuditEvent.objects.filter(feature_name="old", type="feature-archived").exists()


@pytest.mark.parametrize(
    ("selected", "archived"),
    [
        # The parent is listed first; the child goes first, then the parent may.
        pytest.param(["parent", "child"], ["child", "parent"], id="parent-with-its-child"),
        pytest.param(["parent"], [], id="parent-alone-refused"),
    ],
)
def test_feature_admin__archive_action__dependents(staff, selected, archived):
    FeatureFactory(name="parent")
    FeatureFactory(name="child")
    FeatureDependency.objects.create(parent_id="parent", child_id="child")

    response = staff.post(
        CHANGELIST, {"action": "archive_selected", "_selected_action": selected}, follow=True
    )

    assert response.status_code == 200
    assert (
        sorted(Feature.objects.filter(archived_at__isnull=False).values_list("name", flat=True))
        == archived
    )
    shown = [str(message) for message in response.context["messages"]]
    if not archived:
        assert (
            "parent: You can not archive/delete this feature since other features depend on it."
            in shown
        )


def test_tag_type_admin__manages_tag_types(staff):
    response = staff.post(
        "/admin/features/tagtype/add/", {"name": "team", "description": "Owning team"}
    )

    assert response.status_code == 302
    assert TagType.objects.filter(name="team").exists()
    assert staff.get("/admin/features/tagtype/").status_code == 200


def test_feature_admin__other_pages_load(staff):
    ProjectFactory()
    for page in ["tag", "segment", "featurestrategy"]:
        assert staff.get(f"/admin/features/{page}/").status_code == 200, page


def test_feature_admin__change__records_metadata_update(staff):
    FeatureFactory(name="edited", description="before")
    management = {
        f"{prefix}-{field}": "0"
        for prefix in ["environments", "feature_tags", "lifecycle_stages", "dependencies"]
        for field in ["TOTAL_FORMS", "INITIAL_FORMS"]
    }

    response = staff.post(
        f"{CHANGELIST}edited/change/",
        {"type": "operational", "description": "after", "stale": "on", **management},
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    flag = Feature.objects.get(name="edited")
    assert (flag.type, flag.description, flag.stale) == ("operational", "after", True)
    event = AuditEvent.objects.get(feature_name="edited", type="feature-metadata-updated")
    assert event.pre_data["description"] == "before"
    assert event.data["description"] == "after"


# --- the flag list: environments, lifecycle, tags, last seen; search; filters ----------------


def _listed_flags(count: int) -> None:
    for index in range(count):
        flag = FeatureFactory(name=f"flag-{index:02}", description=f"checkout step {index}")
        FeatureEnvironmentFactory(feature=flag, environment_id="development", enabled=True)
        FeatureEnvironmentFactory(feature=flag, environment_id="production", enabled=False)
        FeatureTagFactory(feature=flag, tag=TagFactory(value=f"team-{index % 3}"))
        FeatureLifecycleStage.objects.create(feature=flag, stage="initial")


def test_feature_admin__changelist_columns(staff):
    _listed_flags(1)

    response = staff.get(CHANGELIST)

    assert response.status_code == 200
    headers = [header["text"] for header in response.context["result_headers"]][1:]
    assert headers == [
        "name",
        "project",
        "type",
        "development",
        "production",
        "rollout",
        "lifecycle",
        "tags",
        "stale",
        "last seen",
        "created by",
    ]
    [row] = response.context["results"]
    page = "".join(row)
    assert 'alt="True"' in page  # development on
    assert 'alt="False"' in page  # production off
    # Enabled without a strategy: on for everyone.
    assert '<span class="rollout-line">development: on for everyone</span>' in page
    assert '<span class="rollout-line">production: off</span>' in page
    assert "initial" in page
    assert "simple:team-0" in page


@pytest.mark.parametrize("rows", [1, 30])
def test_feature_admin__changelist_query_count_does_not_grow_with_rows(
    staff, rows, django_assert_max_num_queries
):
    _listed_flags(rows)

    # Session, user, environments, count, page, two prefetches, filter choices: the same
    # number for 1 flag as for 30.
    with django_assert_max_num_queries(10):
        response = staff.get(CHANGELIST)

    assert response.status_code == 200
    assert len(response.context["cl"].result_list) == rows


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("?q=team-1", {"flag-01"}, id="search-tag-value"),
        pytest.param("?q=checkout", {"flag-00", "flag-01", "flag-02"}, id="search-description"),
        pytest.param("?q=flag-02", {"flag-02"}, id="search-name"),
        pytest.param("?environment=production:on", {"flag-01"}, id="enabled-in-production"),
        pytest.param(
            "?environment=production:off", {"flag-00", "flag-02"}, id="disabled-in-production"
        ),
        pytest.param("?environment=development:on", {"flag-00", "flag-01", "flag-02"}, id="dev"),
    ],
)
def test_feature_admin__changelist_search_and_environment_filter(staff, query, expected):
    _listed_flags(3)
    FeatureEnvironment.objects.filter(feature_id="flag-01", environment_id="production").update(
        enabled=True
    )

    response = staff.get(CHANGELIST + query)

    assert response.status_code == 200
    assert {feature.name for feature in response.context["cl"].result_list} == expected


def test_feature_admin__actions_per_environment_and_no_bulk_delete(staff):
    _listed_flags(1)

    response = staff.get(CHANGELIST)

    choices = [value for value, _ in response.context["action_form"].fields["action"].choices]
    assert choices == [
        "",
        "archive_selected",
        "enable_in_development",
        "disable_in_development",
        "enable_in_production",
        "disable_in_production",
    ]


@pytest.mark.parametrize(
    "url", ["/admin/features/featureusagebucket/", "/admin/features/clientinstance/"]
)
def test_sdk_reports_admin__listed_read_only(staff, url):
    from features.models import ClientInstance, FeatureUsageBucket

    FeatureUsageBucket.objects.create(
        feature_name="f", environment="development", app_name="shop", hour=timezone.now(), yes=1
    )
    ClientInstance.objects.create(app_name="shop", instance_id="i", environment="development")

    response = staff.get(url)

    assert response.status_code == 200
    assert b"shop" in response.content
    assert staff.get(f"{url}add/").status_code == 403


def test_feature_admin__change__locks_in_the_writers_order_before_writing(staff):
    # The page saves the metadata, then the inlines, in one transaction: it locks what they
    # write first, in the order every writer of several flags takes (features.services
    # features.locks), so that it does not deadlock with them.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    if connection.vendor != "postgresql":
        pytest.skip("SQLite locks no rows")
    FeatureFactory(name="edited", description="before")
    management = {
        f"{prefix}-{field}": "0"
        for prefix in ["environments", "feature_tags", "lifecycle_stages", "dependencies"]
        for field in ["TOTAL_FORMS", "INITIAL_FORMS"]
    }

    with CaptureQueriesContext(connection) as queries:
        response = staff.post(
            f"{CHANGELIST}edited/change/",
            {"type": "operational", "description": "after", **management},
        )

    assert response.status_code == 302, response.content.decode()[:3000]
    statements = trace(queries)
    locks = statements.locks(before=statements.first_write())
    assert [table for table, lock in locks if lock == "NO KEY UPDATE"] == [
        "features_feature",
        "features_featureenvironment",
        "features_featuredependency",
        "features_projectflagcount",
        "features_projectflagday",
        "features_projectflagactivity",
        "features_feature",  # update_feature_metadata's own lock, held already
    ]


def test_feature_admin__creator__one_label_the_token_s_name_on_its_page(staff, admin_client):
    created = admin_client.post(
        "/api/admin/projects/default/features",
        json.dumps({"name": "by-token"}),
        content_type="application/json",
    )
    assert created.status_code == 201

    listed = staff.get(CHANGELIST)
    page = staff.get(f"{CHANGELIST}by-token/change/").content.decode()

    [row] = [row for row in listed.context["results"] if "by-token" in "".join(row)]
    assert "".join(row).count('<td class="field-creator">admin token</td>') == 1
    assert '<div class="readonly">admin-tok</div>' in page  # the token's name, from its event
    assert "Unleash Admin Token User" not in page + "".join(row)
