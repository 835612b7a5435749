"""Tags over HTTP: a flag's tags (listTags, addTag, updateTags, removeTag), tags (getTags,
createTag, getTagsByType, getTag, deleteTag) and tag types (getTagTypes, createTagType,
validateTagType, getTagType, updateTagType, deleteTagType), answered as Unleash 8.2 answers
them (its messages, measured on the reference)."""

from __future__ import annotations

import json

import pytest

from features.models import FeatureTag, Tag, TagType
from flagadmin.core.models import AuditEvent
from tests.conftest import assert_error

FEATURES = "/api/admin/projects/default/features"
FLAG_TAGS = "/api/admin/features/flag/tags"
TAGS = "/api/admin/tags"
TAG_TYPES = "/api/admin/tag-types"
SIMPLE = {"name": "simple", "description": "Used to simplify filtering of features", "icon": "#"}


def send(client, method: str, url: str, body):
    return getattr(client, method)(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def flag(admin_client) -> None:
    assert send(admin_client, "post", FEATURES, {"name": "flag"}).status_code == 201


def _events(kind: str) -> list[tuple]:
    return list(
        AuditEvent.objects.filter(type=kind)
        .order_by("id")
        .values_list("feature_name", "project", "data", "pre_data")
    )


# --- a flag's tags ------------------------------------------------------------------------------


def test_add_tag__201_creates_tag_records_events_and_lists_it(admin_client, flag):
    response = send(admin_client, "post", FLAG_TAGS, {"type": "simple", "value": "red"})

    assert response.status_code == 201
    assert response["Location"] == "/api/admin/features/flag/tags"
    assert response.json() == {"type": "simple", "value": "red"}
    assert _events("tag-created") == [(None, None, {"type": "simple", "value": "red"}, None)]
    assert _events("feature-tagged") == [
        ("flag", "default", {"type": "simple", "value": "red"}, None)
    ]
    assert admin_client.get(FLAG_TAGS).json() == {
        "version": 1,
        "tags": [{"type": "simple", "value": "red", "color": "#FFFFFF"}],
    }


def test_add_tag__again__201_and_changes_nothing(admin_client, flag):
    send(admin_client, "post", FLAG_TAGS, {"type": "simple", "value": "red"})

    response = send(admin_client, "post", FLAG_TAGS, {"type": "simple", "value": "red"})

    assert response.status_code == 201
    assert FeatureTag.objects.count() == 1
    assert len(_events("feature-tagged")) == 1


def test_add_tag__reaches_sdks_through_the_tag_filter(admin_client, client_token_client, flag):
    send(admin_client, "post", FEATURES, {"name": "other"})
    url = "/api/client/features?tag=simple:red"
    assert client_token_client.get(url).json()["features"] == []

    send(admin_client, "post", FLAG_TAGS, {"type": "simple", "value": "red"})

    assert [f["name"] for f in client_token_client.get(url).json()["features"]] == ["flag"]


@pytest.mark.parametrize(
    ("body", "message", "details"),
    [
        pytest.param(
            {"type": "nosuch", "value": "red"},
            "Request validation failed: your request body or params contain invalid data: "
            "Tag type 'nosuch' does not exist",
            [{"message": "Tag type 'nosuch' does not exist"}],
            id="unknown-type",
        ),
        pytest.param(
            {"type": "simple", "value": "r"},
            None,
            [
                {
                    "path": "/body/value",
                    "message": "The `/body/value` property must NOT have fewer than 2 characters. "
                    'You sent "r".',
                }
            ],
            id="value-too-short",
        ),
        pytest.param(
            {"value": "blue"},
            None,
            [
                {
                    "path": "/body/type",
                    "message": "The `/body/type` property is required. It was not present on "
                    "the data you sent.",
                }
            ],
            id="type-missing",
        ),
        pytest.param(
            {"type": "simple", "value": "blue", "extra": 1},
            None,
            [
                {
                    "path": "/body/extra",
                    "message": "The `/body` object of the request body does not allow "
                    "additional properties. Your request included the `/body/extra` property.",
                }
            ],
            id="extra-property",
        ),
    ],
)
def test_add_tag__invalid__400(admin_client, flag, body, message, details):
    response = send(admin_client, "post", FLAG_TAGS, body)

    error = assert_error(response, 400, "ValidationError")
    assert error["details"] == details
    if message:
        assert error["message"] == message
    assert FeatureTag.objects.count() == 0


@pytest.mark.parametrize(
    ("method", "body", "message"),
    [
        pytest.param("get", None, "Could not find feature with name nope", id="list"),
        pytest.param("post", {"type": "simple", "value": "red"}, "No feature flag found", id="add"),
        pytest.param(
            "put",
            {"addedTags": [], "removedTags": []},
            "Could not find feature with name nope",
            id="update",
        ),
    ],
)
def test_flag_tags__unknown_flag__404(admin_client, method, body, message):
    url = "/api/admin/features/nope/tags"
    response = admin_client.get(url) if body is None else send(admin_client, method, url, body)

    assert assert_error(response, 404, "NotFoundError")["message"] == message


def test_update_tags__adds_then_removes_and_answers_the_tags(admin_client, flag):
    send(admin_client, "post", FLAG_TAGS, {"type": "simple", "value": "red"})

    response = send(
        admin_client,
        "put",
        FLAG_TAGS,
        {
            "addedTags": [{"type": "simple", "value": "green"}],
            "removedTags": [{"type": "simple", "value": "red"}, {"type": "simple", "value": "no"}],
        },
    )

    assert response.status_code == 200
    assert response.json() == {
        "version": 1,
        "tags": [{"type": "simple", "value": "green", "color": "#FFFFFF"}],
    }
    assert _events("feature-untagged") == [
        ("flag", "default", None, {"type": "simple", "value": "red"})
    ]


def test_update_tags__unknown_type__400_and_nothing_changes(admin_client, flag):
    body = {
        "addedTags": [{"type": "simple", "value": "green"}, {"type": "nosuch", "value": "x1"}],
        "removedTags": [],
    }

    response = send(admin_client, "put", FLAG_TAGS, body)

    assert_error(response, 400, "ValidationError")
    assert (Tag.objects.count(), FeatureTag.objects.count(), _events("feature-tagged")) == (
        0,
        0,
        [],
    )


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"addedTags": []}, "/body/removedTags", id="removed-missing"),
        pytest.param(
            {"addedTags": [{"type": "simple", "value": "ab", "x": 1}], "removedTags": []},
            "/body/addedTags/0/x",
            id="extra-in-tag",
        ),
    ],
)
def test_update_tags__invalid__400(admin_client, flag, body, path):
    response = send(admin_client, "put", FLAG_TAGS, body)

    assert assert_error(response, 400, "ValidationError")["details"][0]["path"] == path


def test_remove_tag__200_and_event(admin_client, flag):
    send(admin_client, "post", FLAG_TAGS, {"type": "simple", "value": "red"})

    response = admin_client.delete(f"{FLAG_TAGS}/simple/red")

    assert (response.status_code, response.content) == (200, b"")
    assert admin_client.get(FLAG_TAGS).json() == {"version": 1, "tags": []}
    assert len(_events("feature-untagged")) == 1


def test_remove_tag__not_tagged__200_without_event(admin_client, flag):
    response = admin_client.delete(f"{FLAG_TAGS}/simple/never")

    assert response.status_code == 200
    assert _events("feature-untagged") == []


def test_remove_tag__unknown_flag__404(admin_client):
    response = admin_client.delete("/api/admin/features/nope/tags/simple/red")

    assert assert_error(response, 404, "NotFoundError")["message"] == "No feature flag found"


def test_flag_tags__list_query_count(admin_client, flag, django_assert_max_num_queries):
    for value in ("aa", "bb", "cc"):
        send(admin_client, "post", FLAG_TAGS, {"type": "simple", "value": value})

    with django_assert_max_num_queries(4):
        response = admin_client.get(FLAG_TAGS)

    assert [t["value"] for t in response.json()["tags"]] == ["aa", "bb", "cc"]


# --- tags ---------------------------------------------------------------------------------------


def test_create_tag__201_trimmed_with_location_and_event(admin_client):
    response = send(admin_client, "post", TAGS, {"type": "simple", "value": " blue "})

    assert response.status_code == 201
    assert response["Location"] == "/api/admin/tags/simple/blue"
    assert response.json() == {"version": 1, "tag": {"type": "simple", "value": "blue"}}
    assert _events("tag-created") == [(None, None, {"type": "simple", "value": "blue"}, None)]


def test_create_tag__exists__409(admin_client):
    send(admin_client, "post", TAGS, {"type": "simple", "value": "blue"})

    response = send(admin_client, "post", TAGS, {"type": "simple", "value": "blue"})

    assert assert_error(response, 409, "NameExistsError")["message"] == (
        "A tag of simple:blue already exists"
    )


def test_create_tag__unknown_type__400_where_unleash_answers_500(admin_client):
    # Unleash 8.2 lets the foreign-key violation through: 500 UnknownError quoting its SQL.
    response = send(admin_client, "post", TAGS, {"type": "nosuch", "value": "blue"})

    assert assert_error(response, 400, "ValidationError")["details"] == [
        {"message": "Tag type 'nosuch' does not exist"}
    ]


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        pytest.param(
            {"type": "simple", "value": "b"},
            {
                "path": "/body/value",
                "message": "The `/body/value` property must match pattern "
                '"^\\s*\\S.{0,48}\\S\\s*$". You sent "b".',
            },
            id="value-short",
        ),
        pytest.param(
            {"value": "blue"},
            {
                "path": "/body/type",
                "message": "The `/body/type` property is required. It was not present on the "
                "data you sent.",
            },
            id="type-missing",
        ),
    ],
)
def test_create_tag__invalid__400(admin_client, body, detail):
    response = send(admin_client, "post", TAGS, body)

    assert assert_error(response, 400, "ValidationError")["details"] == [detail]


def test_tags__list_by_type_and_get(admin_client, django_assert_max_num_queries):
    TagType.objects.create(name="team")
    for tag_type, value in (("simple", "bb"), ("team", "red"), ("simple", "aa")):
        send(admin_client, "post", TAGS, {"type": tag_type, "value": value})

    with django_assert_max_num_queries(3):
        everything = admin_client.get(TAGS)

    assert everything.json() == {
        "version": 1,
        "tags": [
            {"type": "simple", "value": "bb"},
            {"type": "team", "value": "red"},
            {"type": "simple", "value": "aa"},
        ],
    }
    assert admin_client.get(f"{TAGS}/team").json() == {
        "version": 1,
        "tags": [{"type": "team", "value": "red"}],
    }
    assert admin_client.get(f"{TAGS}/nosuch").json() == {"version": 1, "tags": []}
    assert admin_client.get(f"{TAGS}/team/red").json() == {
        "version": 1,
        "tag": {"type": "team", "value": "red"},
    }


def test_get_tag__unknown__404(admin_client):
    response = admin_client.get(f"{TAGS}/simple/nope")

    assert assert_error(response, 404, "NotFoundError")["message"] == (
        "No tag with type: [simple] and value [nope]"
    )


def test_delete_tag__untags_flags_and_records_event(admin_client, client_token_client, flag):
    send(admin_client, "post", FLAG_TAGS, {"type": "simple", "value": "red"})

    response = admin_client.delete(f"{TAGS}/simple/red")

    assert (response.status_code, response.content) == (200, b"")
    assert admin_client.get(FLAG_TAGS).json()["tags"] == []
    assert _events("tag-deleted") == [(None, None, {"type": "simple", "value": "red"}, None)]
    assert client_token_client.get("/api/client/features?tag=simple:red").json()["features"] == []


def test_delete_tag__unknown__200_without_event(admin_client):
    assert admin_client.delete(f"{TAGS}/simple/nope").status_code == 200
    assert _events("tag-deleted") == []


# --- tag types ----------------------------------------------------------------------------------


def test_tag_types__list(admin_client, django_assert_max_num_queries):
    with django_assert_max_num_queries(3):
        response = admin_client.get(TAG_TYPES)

    assert response.json() == {"version": 1, "tagTypes": [{**SIMPLE, "color": "#FFFFFF"}]}


def test_create_tag_type__201_location_event_and_get(admin_client):
    body = {"name": "team", "description": "d", "icon": "i", "color": "#00ff00"}

    response = send(admin_client, "post", TAG_TYPES, body)

    assert response.status_code == 201
    assert response["Location"] == "/api/admin/tag-types/team"
    assert response.json() == body
    assert _events("tag-type-created") == [(None, None, body, None)]
    assert admin_client.get(f"{TAG_TYPES}/team").json() == {"version": 1, "tagType": body}


def test_create_tag_type__taken__409(admin_client):
    response = send(admin_client, "post", TAG_TYPES, {"name": "simple"})

    assert assert_error(response, 409, "NameExistsError")["message"] == (
        "There already exists a tag-type with the name simple"
    )


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        pytest.param(
            {"name": "t"},
            {
                "path": "/body/name",
                "message": "The `/body/name` property must NOT have fewer than 2 characters. "
                'You sent "t".',
            },
            id="name-short",
        ),
        pytest.param(
            {"name": "a b"},
            {
                "path": "/body/name",
                "message": 'The `/body/name` property must be URL friendly. You sent "a b".',
            },
            id="name-not-url-friendly",
        ),
        pytest.param(
            {"name": "team", "color": "red"},
            {
                "path": "/body/color",
                "message": 'The `/body/color` property must match pattern "^#[0-9A-Fa-f]{6}$". '
                'You sent "red".',
            },
            id="color",
        ),
        pytest.param(
            {"name": "team", "color": "#aabbcc\n"},
            {
                "path": "/body/color",
                "message": 'The `/body/color` property must match pattern "^#[0-9A-Fa-f]{6}$". '
                'You sent "#aabbcc\\n".',  # as JSON writes it
            },
            id="color-final-newline",
        ),
        pytest.param(
            {},
            {
                "path": "/body/name",
                "message": "The `/body/name` property is required. It was not present on the "
                "data you sent.",
            },
            id="name-missing",
        ),
    ],
)
def test_create_tag_type__invalid__400(admin_client, body, detail):
    response = send(admin_client, "post", TAG_TYPES, body)

    assert assert_error(response, 400, "ValidationError")["details"] == [detail]


def test_validate_tag_type__free__200(admin_client):
    response = send(admin_client, "post", f"{TAG_TYPES}/validate", {"name": "team"})

    assert response.status_code == 200
    assert response.json() == {"valid": True, "tagType": {"name": "team"}}


def test_validate_tag_type__taken__409(admin_client):
    response = send(admin_client, "post", f"{TAG_TYPES}/validate", {"name": "simple"})

    assert_error(response, 409, "NameExistsError")


def test_update_tag_type__changes_given_fields_and_event(admin_client):
    response = send(admin_client, "put", f"{TAG_TYPES}/simple", {"description": "new"})

    assert (response.status_code, response.content) == (200, b"")
    assert admin_client.get(f"{TAG_TYPES}/simple").json()["tagType"] == {
        **SIMPLE,
        "description": "new",
        "color": "#FFFFFF",
    }
    assert _events("tag-type-updated") == [
        (None, None, {"name": "simple", "description": "new"}, None)
    ]


def test_update_tag_type__unknown__404_where_unleash_answers_200(admin_client):
    # Unleash 8.2 answers 200 and records an update of nothing.
    response = send(admin_client, "put", f"{TAG_TYPES}/nosuch", {"description": "new"})

    assert assert_error(response, 404, "NotFoundError")["message"] == "Could not find tag-type"
    assert _events("tag-type-updated") == []


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        pytest.param(
            {"description": "x", "color": "nope"},
            {
                "path": "/body/color",
                "message": 'The `/body/color` property must match pattern "^#[0-9A-Fa-f]{6}$". '
                'You sent "nope".',
            },
            id="color",
        ),
        pytest.param(
            # Unleash 8.2 stores "5"; a description is a string
            {"description": 5},
            {
                "path": "/body/description",
                "message": "The `/body/description` property must be string. You sent 5.",
            },
            id="description-not-string",
        ),
    ],
)
def test_update_tag_type__invalid__400_nothing_changed(admin_client, body, detail):
    response = send(admin_client, "put", f"{TAG_TYPES}/simple", body)

    assert assert_error(response, 400, "ValidationError")["details"] == [detail]
    assert admin_client.get(f"{TAG_TYPES}/simple").json()["tagType"] == {
        **SIMPLE,
        "color": "#FFFFFF",
    }
    assert _events("tag-type-updated") == []


def test_update_tag_type__empty_body__200_unchanged_where_unleash_answers_500(admin_client):
    # Unleash 8.2: 500 "Empty .update() call detected!" with its SQL table and columns.
    response = send(admin_client, "put", f"{TAG_TYPES}/simple", {})

    assert (response.status_code, response.content) == (200, b"")
    assert admin_client.get(f"{TAG_TYPES}/simple").json()["tagType"] == {
        **SIMPLE,
        "color": "#FFFFFF",
    }


def test_delete_tag_type__deletes_its_tags_and_records_event(admin_client, flag):
    send(admin_client, "post", TAG_TYPES, {"name": "team"})
    send(admin_client, "post", FLAG_TAGS, {"type": "team", "value": "red"})

    response = admin_client.delete(f"{TAG_TYPES}/team")

    assert (response.status_code, response.content) == (200, b"")
    assert admin_client.get(FLAG_TAGS).json()["tags"] == []
    assert _events("tag-type-deleted") == [
        (None, None, None, {"name": "team", "description": "", "icon": None, "color": None})
    ]
    assert_error(admin_client.get(f"{TAG_TYPES}/team"), 404, "NotFoundError")


def test_delete_tag_type__unknown__404(admin_client):
    assert_error(admin_client.delete(f"{TAG_TYPES}/nosuch"), 404, "NotFoundError")


# --- who may -----------------------------------------------------------------------------------

WRITES = [
    pytest.param("post", FLAG_TAGS, {"type": "simple", "value": "red"}, id="addTag"),
    pytest.param("put", FLAG_TAGS, {"addedTags": [], "removedTags": []}, id="updateTags"),
    pytest.param("delete", f"{FLAG_TAGS}/simple/red", None, id="removeTag"),
    pytest.param("delete", f"{TAGS}/simple/red", None, id="deleteTag"),
    pytest.param("post", TAG_TYPES, {"name": "team"}, id="createTagType"),
    pytest.param("put", f"{TAG_TYPES}/simple", {"description": "x"}, id="updateTagType"),
    pytest.param("delete", f"{TAG_TYPES}/simple", None, id="deleteTagType"),
]
READS = [FLAG_TAGS, TAGS, f"{TAGS}/simple", TAG_TYPES, f"{TAG_TYPES}/simple"]


def _call(client, method, url, body):
    if body is None:
        return getattr(client, method)(url)
    return send(client, method, url, body)


@pytest.mark.parametrize("url", READS)
def test_reads__anonymous__401(anon_client, url):
    assert_error(anon_client.get(url), 401, "AuthenticationRequired")


@pytest.mark.parametrize("url", READS)
def test_reads__client_token__403(client_token_client, url):
    assert_error(client_token_client.get(url), 403, "NoAccessError")


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_writes__viewer__403(viewer_client, flag, method, url, body):
    assert_error(_call(viewer_client, method, url, body), 403, "NoAccessError")


@pytest.mark.parametrize(("method", "url", "body"), WRITES)
def test_writes__anonymous__401(anon_client, method, url, body):
    assert_error(_call(anon_client, method, url, body), 401, "AuthenticationRequired")


@pytest.mark.parametrize(("method", "url", "body"), WRITES[4:7])
def test_tag_type_writes__editor__403(editor_client, method, url, body):
    assert_error(_call(editor_client, method, url, body), 403, "NoAccessError")


def test_add_tag__editor__201(editor_client, flag):
    response = send(editor_client, "post", FLAG_TAGS, {"type": "simple", "value": "red"})

    assert response.status_code == 201


def test_tag_types__admin_user__201(admin_user_client):
    assert send(admin_user_client, "post", TAG_TYPES, {"name": "team"}).status_code == 201


@pytest.mark.parametrize(
    "url", [FLAG_TAGS, TAGS, TAG_TYPES, f"{TAG_TYPES}/validate", f"{TAG_TYPES}/simple"]
)
def test_bodies__wrong_content_type__415(admin_client, flag, url):
    method = "put" if url in (f"{TAG_TYPES}/simple",) else "post"

    response = getattr(admin_client, method)(url, "name=x", content_type="text/plain")

    assert_error(response, 415, "ContentTypeerror")


def test_create_tag__viewer__201_as_unleash_asks_no_permission(viewer_client):
    response = send(viewer_client, "post", TAGS, {"type": "simple", "value": "blue"})

    assert response.status_code == 201
    assert Tag.objects.filter(type_id="simple", value="blue").exists()


def test_create_tag__anonymous__401(anon_client, db):
    response = send(anon_client, "post", TAGS, {"type": "simple", "value": "blue"})

    assert_error(response, 401, "AuthenticationRequired")
    assert not Tag.objects.filter(value="blue").exists()
