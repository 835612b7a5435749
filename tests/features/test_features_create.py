"""POST /api/admin/projects/:projectId/features (contract section 3)."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from features.models import (
    Feature,
    FeatureEnvironment,
    FeatureLifecycleStage,
    FeatureTag,
    ProjectFlagCount,
    Tag,
)
from flagadmin.core.models import AuditEvent, Role, TokenType, User
from projects.models import Environment, ProjectEnvironment
from tests.concurrency import concurrent_db
from tests.conftest import assert_error
from tests.factories import (
    FeatureFactory,
    ProjectFactory,
    ProjectRoleAssignmentFactory,
    TagFactory,
    TagTypeFactory,
    UserFactory,
    make_token,
)

URL = "/api/admin/projects/default/features"
ADMIN_TOKEN_USER = {"id": -42, "name": "Unleash Admin Token User", "imageUrl": ""}


def post(client, body, url=URL):
    return client.post(url, json.dumps(body), content_type="application/json")


def environment_entry(feature: str, name: str, env_type: str, sort_order: int) -> dict:
    return {
        "name": name,
        "featureName": feature,
        "environment": name,
        "type": env_type,
        "enabled": False,
        "sortOrder": sort_order,
        "variantCount": 0,
        "strategies": [],
        "variants": [],
        "lastSeenAt": None,
        "hasStrategies": False,
        "hasEnabledStrategies": False,
    }


# --- success -----------------------------------------------------------------------------


def test_create_feature__minimal_body__201_with_whole_flag(admin_client):
    before = timezone.now()

    response = post(admin_client, {"name": "new.flag"})

    assert response.status_code == 201, response.content
    assert response["Location"] == "/api/admin/projects/default/features/new.flag"
    body = response.json()
    created_at = parse_datetime(body["createdAt"])
    assert before <= created_at <= timezone.now()
    assert body == {
        "name": "new.flag",
        "type": "release",
        "description": None,
        "project": "default",
        "enabled": False,
        "stale": False,
        "favorite": False,
        "impressionData": False,
        "archived": False,
        "archivedAt": None,
        "createdAt": body["createdAt"],
        "createdBy": ADMIN_TOKEN_USER,
        "lastSeenAt": None,
        "environments": [
            environment_entry("new.flag", "development", "development", 100),
            environment_entry("new.flag", "production", "production", 200),
        ],
        "variants": [],
        "tags": [],
        "children": [],
        "lifecycle": {"stage": "initial", "enteredStageAt": body["createdAt"]},
        "dependencies": [],
        "collaborators": {"users": [ADMIN_TOKEN_USER]},
    }


def test_create_feature__all_fields__stored_as_sent(admin_client):
    response = post(
        admin_client,
        {
            "name": "full.flag",
            "type": "kill-switch",
            "description": "Turns the thing off",
            "impressionData": True,
            "tags": [{"type": "simple", "value": "team-red"}],
        },
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["type"], body["description"], body["impressionData"]) == (
        "kill-switch",
        "Turns the thing off",
        True,
    )
    assert body["tags"] == [{"type": "simple", "value": "team-red"}]
    feature = Feature.objects.get(name="full.flag")
    assert (feature.type, feature.description, feature.impression_data, feature.stale) == (
        "kill-switch",
        "Turns the thing off",
        True,
        False,
    )
    assert feature.archived_at is None
    assert feature.created_by_id == User.ADMIN_TOKEN_USER_ID


def test_create_feature__defaults(admin_client):
    post(admin_client, {"name": "defaults"})

    feature = Feature.objects.get(name="defaults")
    assert feature.type == "release"
    assert feature.description is None
    assert feature.impression_data is False
    assert list(feature.tags.all()) == []


def test_create_feature__empty_description__stored_as_null(admin_client):
    response = post(admin_client, {"name": "blank.description", "description": ""})

    assert response.status_code == 201
    assert response.json()["description"] is None
    assert Feature.objects.get(name="blank.description").description is None


def test_create_feature__null_description__201(admin_client):
    response = post(admin_client, {"name": "null.description", "description": None})

    assert response.status_code == 201
    assert response.json()["description"] is None


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("it's-(ok)!~*", id="all-punctuation"),
        pytest.param("a", id="one-character"),
        pytest.param("x" * 100, id="100-characters"),
        pytest.param("...", id="three-dots"),
        pytest.param("CamelCase_and.dots-1", id="mixed"),
    ],
)
def test_create_feature__url_friendly_names__201(admin_client, name):
    response = post(admin_client, {"name": name})

    assert response.status_code == 201, response.content
    assert response.json()["name"] == name
    # These characters need no percent-encoding: the Location carries the name unchanged.
    assert response["Location"] == f"/api/admin/projects/default/features/{name}"


def test_create_feature__names_are_case_sensitive(admin_client):
    FeatureFactory(name="casing")

    response = post(admin_client, {"name": "Casing"})

    assert response.status_code == 201


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("archived", True, id="archived"),
        pytest.param("stale", True, id="stale"),
        pytest.param("createdAt", "2020-01-01T00:00:00.000Z", id="createdAt"),
        pytest.param("createdByUserId", 1, id="createdByUserId"),
        pytest.param("enabled", True, id="enabled"),
        pytest.param("strategies", [{"name": "default"}], id="strategies"),
        pytest.param("variants", [{"name": "a", "weight": 1000}], id="variants"),
        pytest.param("project", "elsewhere", id="project"),
        pytest.param("unknownField", "x", id="unknown"),
    ],
)
def test_create_feature__server_decided_fields__ignored(admin_client, field, value):
    response = post(admin_client, {"name": "ignores", field: value})

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["archived"], body["archivedAt"], body["stale"], body["enabled"]) == (
        False,
        None,
        False,
        False,
    )
    assert body["project"] == "default"
    assert body["createdBy"] == ADMIN_TOKEN_USER
    assert not body["createdAt"].startswith("2020")
    assert all(env["strategies"] == [] and env["variants"] == [] for env in body["environments"])
    feature = Feature.objects.get(name="ignores")
    assert feature.archived_at is None
    assert feature.stale is False
    assert feature.project_id == "default"
    assert feature.created_by_id == User.ADMIN_TOKEN_USER_ID
    assert feature.created_at.year == timezone.now().year


# --- environments, lifecycle, creator ---------------------------------------------------------


def test_create_feature__one_disabled_entry_per_project_environment(admin_client):
    Environment.objects.create(name="staging", type="test", sort_order=150)
    project = ProjectFactory(with_environments=False)
    ProjectEnvironment.objects.create(project=project, environment_id="production")

    response = post(
        admin_client, {"name": "one.env"}, url=f"/api/admin/projects/{project.id}/features"
    )

    assert response.status_code == 201, response.content
    assert [env["name"] for env in response.json()["environments"]] == ["production"]
    rows = FeatureEnvironment.objects.filter(feature_id="one.env")
    assert [(row.environment_id, row.enabled, row.variants) for row in rows] == [
        ("production", False, [])
    ]


def test_create_feature__every_project_environment_in_sort_order(admin_client):
    Environment.objects.create(name="staging", type="test", sort_order=150)
    project = ProjectFactory()

    response = post(
        admin_client, {"name": "envs"}, url=f"/api/admin/projects/{project.id}/features"
    )

    assert [env["name"] for env in response.json()["environments"]] == [
        "development",
        "staging",
        "production",
    ]
    assert FeatureEnvironment.objects.filter(feature_id="envs").count() == 3


def test_create_feature__project_without_environments__no_entries(admin_client):
    project = ProjectFactory(with_environments=False)

    response = post(
        admin_client, {"name": "no.env"}, url=f"/api/admin/projects/{project.id}/features"
    )

    assert response.status_code == 201
    assert response.json()["environments"] == []
    assert response.json()["enabled"] is False


def test_create_feature__project_without_environments_with_tags__201(admin_client):
    project = ProjectFactory(with_environments=False)

    response = post(
        admin_client,
        {"name": "no.env.tagged", "tags": [{"type": "simple", "value": "lonely"}]},
        url=f"/api/admin/projects/{project.id}/features",
    )

    assert response.status_code == 201, response.content
    assert response.json()["tags"] == [{"type": "simple", "value": "lonely"}]


def test_create_feature__lifecycle_initial(admin_client):
    response = post(admin_client, {"name": "lifecycle"})

    stage = FeatureLifecycleStage.objects.get(feature_id="lifecycle")
    assert stage.stage == "initial"
    assert response.json()["lifecycle"] == {
        "stage": "initial",
        "enteredStageAt": response.json()["createdAt"],
    }


def test_create_feature__personal_token__user_is_creator(editor_client):
    user = editor_client.user

    response = post(editor_client, {"name": "by.editor"})

    assert response.status_code == 201, response.content
    expected = {"id": user.pk, "name": user.name, "imageUrl": user.image_url}
    assert response.json()["createdBy"] == expected
    assert response.json()["collaborators"] == {"users": [expected]}
    assert Feature.objects.get(name="by.editor").created_by_id == user.pk


# --- audit ----------------------------------------------------------------------------------


def test_create_feature__admin_token__one_audit_event(admin_client):
    response = post(
        admin_client,
        {"name": "audited", "description": "d", "tags": [{"type": "simple", "value": "t1"}]},
    )

    event = AuditEvent.objects.get(feature_name="audited")
    assert event.type == "feature-created"
    assert event.created_by == "admin-tok"
    assert event.created_by_user_id == -42
    assert event.token is not None
    assert event.token.name == "admin-tok"
    assert event.project == "default"
    assert event.environment is None
    assert event.pre_data is None
    assert event.tags == [{"type": "simple", "value": "t1"}]
    assert event.data == {
        "name": "audited",
        "description": "d",
        "type": "release",
        "project": "default",
        "stale": False,
        "createdAt": response.json()["createdAt"],
        "lastSeenAt": None,
        "impressionData": False,
        "archived": False,
    }


def test_create_feature__personal_token__audit_names_the_user(editor_client):
    post(editor_client, {"name": "audited.user"})

    event = AuditEvent.objects.get(feature_name="audited.user")
    assert (event.created_by, event.created_by_user_id) == (
        editor_client.user.email,
        editor_client.user.pk,
    )
    assert event.tags == []


# --- tags -----------------------------------------------------------------------------------


def test_create_feature__existing_tag__linked_not_duplicated(admin_client):
    tag = TagFactory(value="team-red")

    response = post(
        admin_client, {"name": "tagged", "tags": [{"type": "simple", "value": "team-red"}]}
    )

    assert response.status_code == 201, response.content
    assert Tag.objects.filter(type_id="simple", value="team-red").count() == 1
    assert list(FeatureTag.objects.filter(feature_id="tagged").values_list("tag", flat=True)) == [
        tag.pk
    ]


def test_create_feature__new_tag_value__created(admin_client):
    response = post(
        admin_client, {"name": "new.tag", "tags": [{"type": "simple", "value": "fresh"}]}
    )

    assert response.status_code == 201, response.content
    assert Tag.objects.filter(type_id="simple", value="fresh").exists()
    assert response.json()["tags"] == [{"type": "simple", "value": "fresh"}]


def test_create_feature__tags_of_several_types__all_linked(admin_client):
    TagTypeFactory(name="team")

    response = post(
        admin_client,
        {
            "name": "multi.tag",
            "tags": [{"type": "team", "value": "red"}, {"type": "simple", "value": "red"}],
        },
    )

    assert response.json()["tags"] == [
        {"type": "team", "value": "red"},
        {"type": "simple", "value": "red"},
    ]
    assert FeatureTag.objects.filter(feature_id="multi.tag").count() == 2


def test_create_feature__duplicate_tags__collapse(admin_client):
    tag = {"type": "simple", "value": "twice"}

    response = post(admin_client, {"name": "dup.tags", "tags": [tag, tag, dict(tag)]})

    assert response.status_code == 201, response.content
    assert response.json()["tags"] == [tag]
    assert FeatureTag.objects.filter(feature_id="dup.tags").count() == 1
    assert AuditEvent.objects.get(feature_name="dup.tags").tags == [tag]


def test_create_feature__unknown_tag_type__400_nothing_written(admin_client):
    response = post(
        admin_client,
        {
            "name": "bad.tag",
            "tags": [{"type": "simple", "value": "ok"}, {"type": "nope", "value": "x1"}],
        },
    )

    body = assert_error(response, 400, "ValidationError")
    message = f'The `/body/tags/1/type` property {UNKNOWN_TAG_TYPE} You sent "nope".'
    assert body["details"] == [{"path": "/body/tags/1/type", "message": message}]
    assert message in body["message"]
    assert not Feature.objects.filter(name="bad.tag").exists()
    assert not Tag.objects.filter(value="ok").exists()


# --- validation -----------------------------------------------------------------------------

REQUIRED = "is required. It was not present on the data you sent."
TYPES = '"experiment", "kill-switch", "release", "operational", "permission"'
ONE_OF_TYPES = f"must be equal to one of the allowed values: {TYPES}."
URL_FRIENDLY = (
    "must be URL friendly: only the characters A-Z a-z 0-9 - _ . ! ~ * ' ( ) are allowed."
)
UNKNOWN_TAG_TYPE = "must be the name of an existing tag type."


# Each case: the body, the failing property, and the message after "The `<path>` property ".
@pytest.mark.parametrize(
    ("body", "path", "predicate"),
    [
        pytest.param({}, "/body/name", REQUIRED, id="name-missing"),
        pytest.param({"name": 123}, "/body/name", "must be string. You sent 123.", id="name-int"),
        pytest.param(
            {"name": None}, "/body/name", "must be string. You sent null.", id="name-null"
        ),
        pytest.param(
            {"name": ""},
            "/body/name",
            'must NOT have fewer than 1 characters. You sent "".',
            id="name-empty",
        ),
        pytest.param(
            {"name": "x" * 101},
            "/body/name",
            f'must NOT have more than 100 characters. You sent "{"x" * 101}".',
            id="name-101-characters",
        ),
        pytest.param(
            {"name": "Some invalid name"},
            "/body/name",
            f'{URL_FRIENDLY} You sent "Some invalid name".',
            id="name-spaces",
        ),
        pytest.param(
            {"name": "café"}, "/body/name", f'{URL_FRIENDLY} You sent "café".', id="name-non-ascii"
        ),
        pytest.param({"name": "a/b"}, "/body/name", f'{URL_FRIENDLY} You sent "a/b".', id="slash"),
        pytest.param(
            {"name": "a?b#c"}, "/body/name", f'{URL_FRIENDLY} You sent "a?b#c".', id="name-query"
        ),
        pytest.param(
            {"name": "50%"}, "/body/name", f'{URL_FRIENDLY} You sent "50%".', id="name-percent"
        ),
        pytest.param(
            {"name": "."}, "/body/name", 'must not be "." or "..". You sent ".".', id="name-dot"
        ),
        pytest.param(
            {"name": ".."},
            "/body/name",
            'must not be "." or "..". You sent "..".',
            id="name-dot-dot",
        ),
        pytest.param(
            {"name": "ok", "type": "random"},
            "/body/type",
            f'{ONE_OF_TYPES} You sent "random".',
            id="type-unknown",
        ),
        pytest.param(
            {"name": "ok", "type": None},
            "/body/type",
            f"{ONE_OF_TYPES} You sent null.",
            id="type-null",
        ),
        pytest.param(
            {"name": "ok", "type": "Release"},
            "/body/type",
            f'{ONE_OF_TYPES} You sent "Release".',
            id="type-case",
        ),
        pytest.param(
            {"name": "ok", "description": 5},
            "/body/description",
            "must be string. You sent 5.",
            id="description-number",
        ),
        pytest.param(
            {"name": "ok", "impressionData": "yes"},
            "/body/impressionData",
            'must be boolean. You sent "yes".',
            id="impressionData-string",
        ),
        pytest.param(
            {"name": "ok", "impressionData": "true"},
            "/body/impressionData",
            'must be boolean. You sent "true".',
            id="impressionData-string-true",
        ),
        pytest.param(
            {"name": "ok", "impressionData": 1},
            "/body/impressionData",
            "must be boolean. You sent 1.",
            id="impressionData-number",
        ),
        pytest.param(
            {"name": "ok", "impressionData": None},
            "/body/impressionData",
            "must be boolean. You sent null.",
            id="impressionData-null",
        ),
        pytest.param(
            {"name": "ok", "tags": "simple:x"},
            "/body/tags",
            'must be array. You sent "simple:x".',
            id="tags-string",
        ),
        pytest.param(
            {"name": "ok", "tags": None},
            "/body/tags",
            "must be array. You sent null.",
            id="tags-null",
        ),
        pytest.param(
            {"name": "ok", "tags": ["simple"]},
            "/body/tags/0",
            'must be object. You sent "simple".',
            id="tag-string",
        ),
        pytest.param(
            {"name": "ok", "tags": [{"type": "simple"}]},
            "/body/tags/0/value",
            REQUIRED,
            id="tag-value-missing",
        ),
        pytest.param(
            {"name": "ok", "tags": [{"value": "abc"}]},
            "/body/tags/0/type",
            REQUIRED,
            id="tag-type-missing",
        ),
        pytest.param(
            {"name": "ok", "tags": [{"type": "simple", "value": "x"}]},
            "/body/tags/0/value",
            'must NOT have fewer than 2 characters. You sent "x".',
            id="tag-value-1-character",
        ),
        pytest.param(
            {"name": "ok", "tags": [{"type": "simple", "value": "v" * 51}]},
            "/body/tags/0/value",
            f'must NOT have more than 50 characters. You sent "{"v" * 51}".',
            id="tag-value-51-characters",
        ),
        pytest.param(
            {"name": "ok", "tags": [{"type": "s", "value": "abc"}]},
            "/body/tags/0/type",
            'must NOT have fewer than 2 characters. You sent "s".',
            id="tag-type-1-character",
        ),
        pytest.param(
            {"name": "ok", "tags": [{"type": "t" * 51, "value": "abc"}]},
            "/body/tags/0/type",
            f'must NOT have more than 50 characters. You sent "{"t" * 51}".',
            id="tag-type-51-characters",
        ),
        pytest.param(
            {"name": "ok", "tags": [{"type": "simple", "value": 42}]},
            "/body/tags/0/value",
            "must be string. You sent 42.",
            id="tag-value-number",
        ),
        pytest.param(
            {"name": "ok", "tags": [{"type": "unknown", "value": "abc"}]},
            "/body/tags/0/type",
            f'{UNKNOWN_TAG_TYPE} You sent "unknown".',
            id="tag-type-unknown",
        ),
        pytest.param([], "/body", "must be object. You sent [].", id="body-array"),
        pytest.param("flag", "/body", 'must be object. You sent "flag".', id="body-string"),
        pytest.param(None, "/body", "must be object. You sent null.", id="body-null"),
    ],
)
def test_create_feature__invalid_body__400(admin_client, body, path, predicate):
    message = f"The `{path}` property {predicate}"

    response = post(admin_client, body)

    error = assert_error(response, 400, "ValidationError")
    assert error["details"] == [{"path": path, "message": message}]
    assert message in error["message"]
    assert Feature.objects.count() == 0


def test_create_feature__several_invalid_fields__one_detail_each(admin_client):
    response = post(admin_client, {"name": "", "type": "x", "impressionData": "no"})

    error = assert_error(response, 400, "ValidationError")
    assert sorted(d["path"] for d in error["details"]) == [
        "/body/impressionData",
        "/body/name",
        "/body/type",
    ]


def test_create_feature__malformed_json__400(admin_client):
    response = admin_client.post(URL, '{"name": ', content_type="application/json")

    error = assert_error(response, 400, "ValidationError")
    assert error["details"][0]["path"] == "/body"


# --- 404 and 409 ------------------------------------------------------------------------------


def test_create_feature__unknown_project__404(admin_client):
    response = post(admin_client, {"name": "nowhere"}, url="/api/admin/projects/nope/features")

    error = assert_error(response, 404, "NotFoundError")
    assert error["message"] == "Active project with id nope does not exist"
    assert not Feature.objects.filter(name="nowhere").exists()


def test_create_feature__archived_project__404(admin_client):
    project = ProjectFactory(archived_at=timezone.now())

    response = post(
        admin_client, {"name": "archived.project"}, url=f"/api/admin/projects/{project.id}/features"
    )

    error = assert_error(response, 404, "NotFoundError")
    assert error["message"] == f"Active project with id {project.id} does not exist"


def test_create_feature__unknown_project_and_invalid_body__400_first(admin_client):
    response = post(admin_client, {"name": "not valid"}, url="/api/admin/projects/nope/features")

    assert_error(response, 400, "ValidationError")


def test_create_feature__unknown_project_and_taken_name__404_first(admin_client):
    FeatureFactory(name="taken")

    response = post(admin_client, {"name": "taken"}, url="/api/admin/projects/nope/features")

    assert_error(response, 404, "NotFoundError")


def test_create_feature__name_taken__409(admin_client):
    FeatureFactory(name="already.exists")

    response = post(admin_client, {"name": "already.exists"})

    error = assert_error(response, 409, "NameExistsError")
    assert error["message"] == "A flag with that name already exists"


def test_create_feature__name_taken_in_other_project__409(admin_client):
    other = ProjectFactory()
    FeatureFactory(name="elsewhere", project_id=other.id)

    response = post(admin_client, {"name": "elsewhere"})

    error = assert_error(response, 409, "NameExistsError")
    assert error["message"] == "A flag with that name already exists"
    assert Feature.objects.get(name="elsewhere").project_id == other.id


def test_create_feature__name_of_archived_flag__409_archived_wording(admin_client):
    FeatureFactory(name="old.flag", archived_at=timezone.now())

    response = post(admin_client, {"name": "old.flag"})

    error = assert_error(response, 409, "NameExistsError")
    assert error["message"] == "An archived flag with that name already exists"


def test_create_feature__409__nothing_written(admin_client):
    FeatureFactory(name="exists")
    events = AuditEvent.objects.count()

    response = post(admin_client, {"name": "exists", "tags": [{"type": "simple", "value": "new1"}]})

    assert response.status_code == 409
    assert AuditEvent.objects.count() == events
    assert not Tag.objects.filter(value="new1").exists()
    assert not FeatureLifecycleStage.objects.filter(feature_id="exists").exists()


def flag_counts() -> list[tuple]:
    return list(ProjectFlagCount.objects.values_list("project_id", "type", "total"))


def assert_nothing_written(client, name: str, counts_before: list[tuple]) -> None:
    """No row of the flag `name`, the kept counts as they were; then the connection goes on
    and the name is free."""
    assert not Feature.objects.filter(name=name).exists()
    assert not FeatureLifecycleStage.objects.filter(feature_id=name).exists()
    assert not FeatureEnvironment.objects.filter(feature_id=name).exists()
    assert flag_counts() == counts_before
    assert post(client, {"name": name}).status_code == 201


REFUSE_EVENTS = {
    "postgresql": [
        "CREATE FUNCTION test_refuse_event() RETURNS trigger LANGUAGE plpgsql AS "
        "$$BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = 'check_violation'; END$$",
        "CREATE TRIGGER test_refuse_event BEFORE INSERT ON flagadmin_auditevent "
        "FOR EACH ROW EXECUTE FUNCTION test_refuse_event()",
    ],
    "sqlite": [
        "CREATE TRIGGER test_refuse_event BEFORE INSERT ON flagadmin_auditevent "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END",
    ],
}
ALLOW_EVENTS = {
    "postgresql": [
        "DROP TRIGGER test_refuse_event ON flagadmin_auditevent",
        "DROP FUNCTION test_refuse_event()",
    ],
    "sqlite": ["DROP TRIGGER test_refuse_event"],
}


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
def test_create_feature__last_insert_refused__500_nothing_written(admin_client):
    # Outside any transaction of the caller (as served): on PostgreSQL the INSERTs travel in
    # one pipeline, whose transaction must roll back the flag's rows, and the counters its
    # triggers moved, when the audit event (the last INSERT) is refused.
    counts_before = flag_counts()
    with connection.cursor() as cursor:
        for statement in REFUSE_EVENTS[connection.vendor]:
            cursor.execute(statement)
    try:
        admin_client.raise_request_exception = False
        response = post(admin_client, {"name": "refused.flag"})
    finally:
        with connection.cursor() as cursor:
            for statement in ALLOW_EVENTS[connection.vendor]:
                cursor.execute(statement)

    assert_error(response, 500, "InternalError")
    assert_nothing_written(admin_client, "refused.flag", counts_before)


@concurrent_db
@pytest.mark.usefixtures("seeded_rows_back_after_module")
@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's pipeline")
def test_create_feature__app_error_between_inserts__500_nothing_written(admin_client, monkeypatch):
    # An error of the app's own (not the database's) after the flag's INSERT was sent and
    # before the last one: the pipeline's Sync still goes out, and must not commit anything.
    from flagadmin.core.db import PreparedBinaryCursor

    send = PreparedBinaryCursor.execute

    def fail_at_the_event(self, query, params=None, **kwargs):
        if str(query).startswith('INSERT INTO "flagadmin_auditevent"'):
            raise RuntimeError("the app failed between two INSERTs")
        return send(self, query, params, **kwargs)

    counts_before = flag_counts()
    monkeypatch.setattr(PreparedBinaryCursor, "execute", fail_at_the_event)
    admin_client.raise_request_exception = False
    response = post(admin_client, {"name": "half.flag"})
    monkeypatch.setattr(PreparedBinaryCursor, "execute", send)

    assert_error(response, 500, "InternalError")
    assert_nothing_written(admin_client, "half.flag", counts_before)


postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's prepared statements"
)


def prepared_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements ORDER BY statement")
        return [row[0] for row in cursor.fetchall()]


@postgresql_only
def test_create_feature__statements_prepared_once_per_connection(admin_client):
    before = prepared_statements()

    assert post(admin_client, {"name": "first.flag"}).status_code == 201
    after_first = prepared_statements()
    assert post(admin_client, {"name": "second.flag"}).status_code == 201

    new = [statement for statement in after_first if statement not in before]
    tables = ["flagadmin_apitoken", "projects_project", "features_feature"]
    tables += ["features_featurelifecyclestage", "features_featureenvironment"]
    tables += ["flagadmin_auditevent"]
    assert sorted(next(t for t in tables if f'"{t}"' in s) for s in new) == sorted(tables)
    assert prepared_statements() == after_first  # the second creation reused them all


@postgresql_only
def test_create_feature__preparing_off__nothing_prepared(admin_client):
    # DB_PREPARED_STATEMENTS off (a pooler that cannot keep them) sets this on connect.
    connection.ensure_connection()
    threshold = connection.connection.prepare_threshold
    connection.connection.prepare_threshold = None
    try:
        before = prepared_statements()
        response = post(admin_client, {"name": "unprepared.flag"})
        after = prepared_statements()
    finally:
        connection.connection.prepare_threshold = threshold

    assert response.status_code == 201
    assert after == before
    assert Feature.objects.filter(name="unprepared.flag", project_id="default").exists()


def test_create_feature__twice__second_409(admin_client):
    assert post(admin_client, {"name": "twice"}).status_code == 201

    error = assert_error(post(admin_client, {"name": "twice"}), 409, "NameExistsError")

    assert error["message"] == "A flag with that name already exists"


# --- authentication, permission, content type -------------------------------------------------


def test_create_feature__anonymous__401(anon_client):
    assert_error(post(anon_client, {"name": "anon"}), 401, "AuthenticationRequired")


def test_create_feature__unknown_token__401(anon_client, db):
    anon_client.credentials(HTTP_AUTHORIZATION="*:*.not-a-real-token")

    assert_error(post(anon_client, {"name": "anon"}), 401, "AuthenticationRequired")


def test_create_feature__client_token__403(client_token_client):
    error = assert_error(post(client_token_client, {"name": "sdk"}), 403, "NoAccessError")

    assert error["permissions"] == ["CREATE_FEATURE"]
    assert not Feature.objects.filter(name="sdk").exists()


def test_create_feature__viewer__403(viewer_client):
    error = assert_error(post(viewer_client, {"name": "viewer"}), 403, "NoAccessError")

    assert error["message"] == (
        "You don't have the required permissions to perform this operation. To perform this "
        'action, you need the "CREATE_FEATURE" permission.'
    )
    assert error["permissions"] == ["CREATE_FEATURE"]


def test_create_feature__viewer_wrong_content_type__403_first(viewer_client):
    response = viewer_client.post(URL, "name=x", content_type="text/plain")

    assert_error(response, 403, "NoAccessError")


def test_create_feature__viewer_unknown_project__403_first(viewer_client):
    response = post(viewer_client, {"name": "x"}, url="/api/admin/projects/nope/features")

    assert_error(response, 403, "NoAccessError")


def test_create_feature__admin_user__201(admin_user_client):
    assert post(admin_user_client, {"name": "by.admin"}).status_code == 201


def test_create_feature__project_member__201_in_own_project_403_elsewhere(db):
    from rest_framework.test import APIClient

    project = ProjectFactory()
    other = ProjectFactory()
    user = UserFactory(root_role_id=Role.VIEWER)
    ProjectRoleAssignmentFactory(project=project, user=user, role_id=Role.MEMBER)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=make_token(TokenType.PERSONAL, user=user)[1])

    own = post(client, {"name": "member.flag"}, url=f"/api/admin/projects/{project.id}/features")
    elsewhere = post(
        client, {"name": "member.other"}, url=f"/api/admin/projects/{other.id}/features"
    )

    assert own.status_code == 201, own.content
    assert own.json()["createdBy"]["id"] == user.pk
    assert_error(elsewhere, 403, "NoAccessError")


@pytest.mark.parametrize(
    ("content_type", "shown"),
    [
        pytest.param("text/plain", "text/plain", id="text-plain"),
        pytest.param(
            "application/x-www-form-urlencoded", "application/x-www-form-urlencoded", id="form"
        ),
        pytest.param("application/vnd.api+json", "application/vnd.api+json", id="vnd-json"),
    ],
)
def test_create_feature__wrong_content_type__415(admin_client, content_type, shown):
    response = admin_client.post(URL, '{"name": "typed"}', content_type=content_type)

    error = assert_error(response, 415, "ContentTypeerror")
    assert error["message"] == (
        f"We do not accept the content-type you provided ({shown}). Try using one of the "
        "content-types we do accept instead (application/json) and make sure the body is in "
        "the corresponding format."
    )
    assert not Feature.objects.filter(name="typed").exists()


def test_create_feature__json_with_charset__201(admin_client):
    response = admin_client.post(
        URL, '{"name": "charset"}', content_type="application/json; charset=utf-8"
    )

    assert response.status_code == 201


def test_create_feature__put_on_collection__405(admin_client):
    # GET lists the project's flags (getFeatures); PUT is no operation of the collection.
    assert_error(admin_client.put(URL, {}, format="json"), 405, "MethodNotAllowedError")


# --- queries --------------------------------------------------------------------------------


def _queries_to_create(client, body: dict, url: str = URL) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = post(client, body, url=url)
    assert response.status_code == 201, response.content
    return len(captured.captured_queries)


def test_create_feature__queries_do_not_grow_with_flags_or_environments(admin_client):
    small = ProjectFactory()
    post(admin_client, {"name": "warm-up"})  # records the token's first use
    few = _queries_to_create(
        admin_client, {"name": "few"}, f"/api/admin/projects/{small.id}/features"
    )
    FeatureFactory.create_batch(40)
    for number in range(3):
        Environment.objects.create(name=f"extra-{number}", type="test", sort_order=150)
    large = ProjectFactory()  # a new project has every environment
    url = f"/api/admin/projects/{large.id}/features"

    many = _queries_to_create(admin_client, {"name": "many"}, url)

    assert many == few
    assert len(admin_client.get(f"{url}/many").json()["environments"]) == 5


def test_create_feature__queries_do_not_grow_with_tags(admin_client):
    TagFactory(value="known")
    post(admin_client, {"name": "warm-up"})  # records the token's first use
    known_and_new = [{"type": "simple", "value": "known"}, {"type": "simple", "value": "new"}]
    more = [{"type": "simple", "value": f"more-{n}"} for n in range(4)]

    two = _queries_to_create(admin_client, {"name": "two.tags", "tags": known_and_new})
    six = _queries_to_create(
        admin_client,
        {"name": "six.tags", "tags": [*known_and_new, *more]},
    )

    assert six == two
    tags = admin_client.get(f"{URL}/six.tags").json()["tags"]
    assert sorted(t["value"] for t in tags) == sorted(t["value"] for t in known_and_new + more)


# --- the answer and the rows ----------------------------------------------------------------


@pytest.mark.parametrize("principal", ["admin_client", "admin_user_client"])
def test_create_feature__answer_equals_what_reading_the_flag_answers(db, request, principal):
    client = request.getfixturevalue(principal)
    TagTypeFactory(name="team")

    created = post(
        client,
        {
            "name": "same.both.ways",
            "type": "operational",
            "description": "read back",
            "impressionData": True,
            "tags": [{"type": "team", "value": "growth"}, {"type": "simple", "value": "x1"}],
        },
    )
    read = client.get(created["Location"])

    assert (created.status_code, read.status_code) == (201, 200)
    assert created.json() == read.json()


def test_create_feature_service__returns_saved_rows_with_their_ids(db):
    from features.services import create_feature

    TagTypeFactory(name="team")
    user = UserFactory()

    feature = create_feature(
        project_id="default", name="saved.rows", tags=[("team", "core")], actor=user
    )

    stored_environments = dict(
        FeatureEnvironment.objects.filter(feature_id="saved.rows").values_list(
            "environment_id", "id"
        )
    )
    assert {env.environment_id: env.id for env in feature.environment_list} == (stored_environments)
    assert feature.current_stage.id == FeatureLifecycleStage.objects.get(feature=feature).id
    saved = [feature, feature.current_stage, *feature.environment_list]
    assert all(not row._state.adding and row._state.db == "default" for row in saved)
    # Saved instances behave as saved: an update through the ORM changes the stored row.
    feature.environment_list[0].enabled = True
    feature.environment_list[0].save(update_fields=["enabled"])
    assert FeatureEnvironment.objects.get(id=feature.environment_list[0].id).enabled is True
