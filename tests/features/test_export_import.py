"""Unleash's import and export (`POST /api/admin/features-batch/export`, `/validate`,
`/import`), answered as Unleash 8.2 answers them (checked against the reference server), and a
real export of the reference imported here serving SDKs what the reference serves them
(`tests/fixtures/unleash_export.json`, recorded by `tests/fixtures/unleash_export_record.py`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from django.utils import timezone

from definitions.models import ContextField
from features.models import Feature, FeatureEnvironment, FeatureStrategy, Segment, TagType
from flagadmin.core.models import AuditEvent, TokenType
from tests.conftest import _client_with, assert_error
from tests.factories import (
    ContextFieldFactory,
    FeatureDependencyFactory,
    FeatureEnvironmentFactory,
    FeatureFactory,
    FeatureStrategyFactory,
    FeatureTagFactory,
    ProjectFactory,
    StrategyDefinitionFactory,
    TagFactory,
    TagTypeFactory,
    make_token,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXPORT = "/api/admin/features-batch/export"
VALIDATE = "/api/admin/features-batch/validate"
IMPORT = "/api/admin/features-batch/import"


def post(client, url: str, body):
    return client.post(url, json.dumps(body), content_type="application/json")


def unleash_export() -> dict:
    return json.loads((FIXTURES / "unleash_export.json").read_text())


def _last_event_id() -> int:
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def _events(since: int) -> list[tuple]:
    return [
        (event.type, event.feature_name, event.environment)
        for event in AuditEvent.objects.filter(id__gt=since).order_by("id")
    ]


def _served(environment: str = "development") -> list[dict]:
    """The client features served to an SDK of `environment`, normalised for order."""
    client = _client_with(make_token(TokenType.CLIENT, environment=environment)[1])
    response = client.get("/api/client/features")
    assert response.status_code == 200
    return _normalised(response.json()["features"])


def _sort_key(item: dict) -> str:
    return json.dumps(item, sort_keys=True)


def _normalised(features: list[dict]) -> list[dict]:
    def constraint(item: dict) -> dict:
        # Unleash serves the keys a constraint was stored with; false flags and empty lists
        # mean the same as absent ones to every SDK.
        return {k: v for k, v in item.items() if v not in (False, [], None)}

    out = []
    for feature in sorted(features, key=lambda f: f["name"]):
        feature = copy.deepcopy(feature)
        for strategy in feature["strategies"]:
            strategy["constraints"] = sorted(
                (constraint(c) for c in strategy["constraints"]), key=_sort_key
            )
            strategy.pop("segments", None)
            strategy.pop("sortOrder", None)
            strategy.pop("id", None)
        feature["strategies"].sort(key=_sort_key)
        out.append(feature)
    return out


@pytest.fixture
def importer(admin_user_client):
    """An Admin's personal access token: Unleash refuses admin tokens on import."""
    return admin_user_client


# --- a real export of the reference Unleash, imported -----------------------------------------


def test_import__unleash_export__serves_what_unleash_serves(importer):
    # Given the segment the export names exists here (an import matches segments by name)
    Segment.objects.create(
        name="ie-segment",
        description="beta users",
        constraints=[{"contextName": "userId", "operator": "IN", "values": ["1", "2"]}],
    )
    body = {"project": "default", "environment": "development", "data": unleash_export()}
    validation = post(importer, VALIDATE, body)
    assert validation.status_code == 200
    assert validation.json() == {"errors": [], "warnings": [], "permissions": []}

    response = post(importer, IMPORT, body)

    assert response.status_code == 200, response.content
    assert response.content == b""
    expected = json.loads((FIXTURES / "unleash_export_client_features.json").read_text())
    assert _served() == _normalised(expected["features"])


def test_import__unleash_export__writes_and_records(importer):
    Segment.objects.create(name="ie-segment", constraints=[])
    before = _last_event_id()
    body = {"project": "default", "environment": "development", "data": unleash_export()}

    assert post(importer, IMPORT, body).status_code == 200

    # Each write with its own event, in Unleash's order, then `features-imported`: the
    # sequence Unleash 8.2 records for the same import (where the tag type, tag values and
    # context field exist already, it records none for them).
    assert _events(before) == [
        ("feature-created", "ie-child", None),
        ("feature-created", "ie-parent", None),
        ("tag-type-created", None, None),
        ("tag-created", None, None),
        ("feature-tagged", "ie-child", None),
        ("tag-created", None, None),
        ("feature-tagged", "ie-parent", None),
        ("context-field-created", None, None),
        ("feature-strategy-add", "ie-child", "development"),
        ("feature-strategy-add", "ie-parent", "development"),
        ("feature-strategy-add", "ie-parent", "development"),
        ("feature-environment-enabled", "ie-child", "development"),
        ("feature-environment-enabled", "ie-parent", "development"),
        ("feature-dependency-added", "ie-child", None),
        ("features-imported", None, "development"),
    ]
    child = Feature.objects.get(name="ie-child")
    assert (child.type, child.description, child.impression_data, child.stale) == (
        "experiment",
        "Child",
        True,
        False,
    )
    field = ContextField.objects.get(name="ieRegion")
    assert field.legal_values == [{"value": "eu", "description": "Europe"}, {"value": "us"}]
    assert TagType.objects.get(name="ie-team").description == "Owning team"
    paused = FeatureStrategy.objects.get(feature_environment__feature_id="ie-parent", disabled=True)
    assert paused.name == "default"
    rollout = FeatureStrategy.objects.get(
        feature_environment__feature_id="ie-parent", name="flexibleRollout"
    )
    assert rollout.title == "Europe, 40 %"
    assert [link.segment.name for link in rollout.segment_links.all()] == ["ie-segment"]
    imported = AuditEvent.objects.get(id__gt=before, type="features-imported")
    assert (imported.project, imported.created_by) == ("default", importer.user.email)


def test_import__variants__recorded_as_the_variants_endpoint_records_them(importer):
    Segment.objects.create(name="ie-segment", constraints=[])
    data = unleash_export()
    data["featureEnvironments"][0]["variants"] = [{"name": "blue", "weight": 1000}]
    before = _last_event_id()

    response = post(
        importer, IMPORT, {"project": "default", "environment": "development", "data": data}
    )

    assert response.status_code == 200, response.content
    event = AuditEvent.objects.get(id__gt=before, type="feature-environment-variants-updated")
    fixed = [{"name": "blue", "weight": 1000, "weightType": "variable"}]
    assert (event.feature_name, event.environment, event.data, event.pre_data) == (
        "ie-child",
        "development",
        {"variants": fixed},
        {"variants": []},
    )


def test_import__again__overwrites_strategies_tags_and_state(importer):
    Segment.objects.create(name="ie-segment", constraints=[])
    data = unleash_export()
    body = {"project": "default", "environment": "development", "data": data}
    assert post(importer, IMPORT, body).status_code == 200
    # The second import: ie-parent off with one strategy, no tags, a new description.
    data["features"][1]["description"] = "Parent, again"
    data["featureStrategies"] = [s for s in data["featureStrategies"] if s["name"] == "default"]
    data["featureEnvironments"][1]["enabled"] = False
    data["featureTags"] = []
    data["tagTypes"] = []
    validation = post(importer, VALIDATE, body)
    assert validation.json() == {
        "errors": [],
        "warnings": [
            {
                "message": "The following features already exist in this project and will be "
                "overwritten:",
                "affectedItems": ["ie-child", "ie-parent"],
            }
        ],
        "permissions": [],
    }
    before = _last_event_id()

    assert post(importer, IMPORT, body).status_code == 200

    assert _events(before) == [
        ("feature-metadata-updated", "ie-parent", None),
        ("feature-untagged", "ie-child", None),
        ("feature-untagged", "ie-parent", None),
        ("feature-strategy-remove", "ie-child", "development"),
        ("feature-environment-disabled", "ie-child", "development"),
        # Off once only paused strategies are left (as after any strategy's delete).
        ("feature-strategy-remove", "ie-parent", "development"),
        ("feature-environment-disabled", "ie-parent", "development"),
        ("feature-strategy-remove", "ie-parent", "development"),
        ("feature-strategy-add", "ie-child", "development"),
        ("feature-strategy-add", "ie-parent", "development"),
        ("feature-environment-enabled", "ie-child", "development"),
        ("feature-dependency-added", "ie-child", None),
        ("features-imported", None, "development"),
    ]
    assert Feature.objects.get(name="ie-parent").description == "Parent, again"
    assert not FeatureEnvironment.objects.get(
        feature_id="ie-parent", environment_id="development"
    ).enabled
    assert list(Feature.objects.get(name="ie-parent").tags.all()) == []
    served = {feature["name"]: feature for feature in _served()}
    assert served["ie-parent"]["enabled"] is False
    assert served["ie-child"]["enabled"] is True


# --- export ---------------------------------------------------------------------------------


@pytest.fixture
def shop(db) -> dict:
    """A project with every kind of content an export carries."""
    ProjectFactory(id="shop")
    region = ContextFieldFactory(
        name="region", legal_values=[{"value": "eu"}, {"value": "us", "description": "USA"}]
    )
    segment = Segment.objects.create(name="beta", constraints=[])
    parent = FeatureFactory(name="shop-parent", project_id="shop", description="Parent")
    child = FeatureFactory(
        name="shop-child", project_id="shop", type="experiment", stale=True, impression_data=True
    )
    FeatureFactory(name="shop-archived", project_id="shop", archived_at=timezone.now())
    FeatureEnvironmentFactory(feature=parent, environment_id="development", enabled=True)
    FeatureEnvironmentFactory(feature=parent, environment_id="production")
    child_env = FeatureEnvironmentFactory(
        feature=child,
        environment_id="development",
        variants=[
            {
                "name": "blue",
                "weight": 1000,
                "weightType": "variable",
                "stickiness": "default",
                "overrides": [{"contextName": "region", "values": ["eu"]}],
            }
        ],
    )
    parent_env = FeatureEnvironment.objects.get(feature=parent, environment_id="development")
    rollout = FeatureStrategyFactory(
        feature_environment=parent_env,
        title="Half",
        sort_order=0,
        constraints=[{"contextName": "region", "operator": "IN", "values": ["eu"]}],
        parameters={"rollout": "50", "stickiness": "default", "groupId": "shop-parent"},
    )
    rollout.segments.add(segment)
    FeatureStrategyFactory(
        feature_environment=child_env, name="default", parameters={}, sort_order=0
    )
    FeatureStrategyFactory(
        feature_environment=FeatureEnvironment.objects.get(
            feature=parent, environment_id="production"
        ),
        name="default",
        parameters={},
    )
    team = TagTypeFactory(name="team", description="Owning team")
    FeatureTagFactory(feature=parent, tag=TagFactory(type=team, value="core"))
    FeatureDependencyFactory(parent=parent, child=child)
    return {"rollout": rollout, "segment": segment, "region": region}


def test_export__project__whole_body_and_event(admin_client, shop, django_assert_max_num_queries):
    before = _last_event_id()

    # One query per kind of row (with the caller's authentication and the event), whatever
    # the number of flags.
    with django_assert_max_num_queries(16):
        response = post(admin_client, EXPORT, {"environment": "development", "project": "shop"})

    assert response.status_code == 200
    strategies = {
        s.feature_environment.feature_id: str(s.id)
        for s in FeatureStrategy.objects.filter(feature_environment__environment_id="development")
    }
    expected = {
        "features": [
            {
                "name": "shop-child",
                "description": None,
                "type": "experiment",
                "project": "shop",
                "stale": True,
                "impressionData": True,
                "archived": False,
            },
            {
                "name": "shop-parent",
                "description": "Parent",
                "type": "release",
                "project": "shop",
                "stale": False,
                "impressionData": False,
                "archived": False,
            },
        ],
        "featureStrategies": [
            {
                "name": "default",
                "id": strategies["shop-child"],
                "featureName": "shop-child",
                "title": None,
                "parameters": {},
                "constraints": [],
                "variants": [],
                "disabled": False,
                "segments": [],
            },
            {
                "name": "flexibleRollout",
                "id": strategies["shop-parent"],
                "featureName": "shop-parent",
                "title": "Half",
                "parameters": {"rollout": "50", "stickiness": "default", "groupId": "shop-parent"},
                "constraints": [{"contextName": "region", "operator": "IN", "values": ["eu"]}],
                "variants": [],
                "disabled": False,
                "segments": [shop["segment"].id],
            },
        ],
        "featureEnvironments": [
            {
                "enabled": False,
                "featureName": "shop-child",
                "environment": "development",
                "variants": [
                    {
                        "name": "blue",
                        "weight": 1000,
                        "weightType": "variable",
                        "stickiness": "default",
                        "overrides": [{"contextName": "region", "values": ["eu"]}],
                    }
                ],
                "name": "shop-child",
            },
            {
                "enabled": True,
                "featureName": "shop-parent",
                "environment": "development",
                "variants": [],
                "name": "shop-parent",
            },
        ],
        "contextFields": [
            {
                "name": "region",
                "description": "A custom field",
                "stickiness": False,
                "sortOrder": 0,
                "legalValues": [{"value": "eu"}, {"value": "us", "description": "USA"}],
            }
        ],
        "featureTags": [{"featureName": "shop-parent", "tagType": "team", "tagValue": "core"}],
        "segments": [{"id": shop["segment"].id, "name": "beta"}],
        "tagTypes": [{"name": "team", "description": "Owning team", "icon": None, "color": None}],
        "dependencies": [
            {
                "feature": "shop-child",
                "dependencies": [{"feature": "shop-parent", "enabled": True, "variants": []}],
            }
        ],
        "links": [],
    }
    assert response.json() == expected
    event = AuditEvent.objects.get(id__gt=before)
    assert (event.type, event.data) == ("features-exported", expected)


def test_export__by_names_and_by_tag__those_flags_archived_included(admin_client, shop):
    by_names = post(
        admin_client,
        EXPORT,
        {"environment": "development", "features": ["shop-archived", "no-such-flag"]},
    )
    by_tag = post(admin_client, EXPORT, {"environment": "development", "tag": "core"})

    assert by_names.status_code == 200
    assert [f["name"] for f in by_names.json()["features"]] == ["shop-archived"]
    assert by_names.json()["features"][0]["archived"] is True
    assert [f["name"] for f in by_tag.json()["features"]] == ["shop-parent"]


def test_export__flagadmin_export_imported_elsewhere__serves_the_same(importer, admin_client, shop):
    """A round trip inside flagadmin: the export of one environment, imported into another
    project's, serves the same strategies (the project's flags are moved by name)."""
    exported = post(admin_client, EXPORT, {"environment": "development", "project": "shop"})
    served_before = {f["name"]: f for f in _served()}
    Feature.objects.filter(project_id="shop").delete()
    ProjectFactory(id="shop2")

    response = post(
        importer,
        IMPORT,
        {"project": "shop2", "environment": "development", "data": exported.json()},
    )

    assert response.status_code == 200, response.content
    served_after = {f["name"]: f for f in _served()}
    for name in ("shop-child", "shop-parent"):
        before, after = served_before[name], served_after[name]
        assert after["project"] == "shop2"
        for key in ("enabled", "type", "stale", "impressionData", "variants", "dependencies"):
            assert after.get(key) == before.get(key), key
        assert _normalised([after])[0]["strategies"] == _normalised([before])[0]["strategies"]


@pytest.mark.parametrize(
    ("body", "path"),
    [
        pytest.param({"project": "shop"}, "/body/environment", id="no-environment"),
        pytest.param({"environment": "development"}, "/body/features", id="no-selection"),
        pytest.param(
            {"environment": "development", "features": [""]}, "/body/features/0", id="blank-name"
        ),
        pytest.param([], "/body", id="not-an-object"),
    ],
)
def test_export__invalid_body__400(admin_client, body, path):
    response = post(admin_client, EXPORT, body)

    error = assert_error(response, 400, "ValidationError")
    assert [detail["path"] for detail in error["details"]] == [path]


def test_export__unknown_environment__404(admin_client):
    """Unleash answers 200 with an empty export for an environment that does not exist."""
    response = post(admin_client, EXPORT, {"environment": "nope", "features": []})

    error = assert_error(response, 404, "NotFoundError")
    assert error["message"] == "Could not find environment nope"


@pytest.mark.parametrize("url", [EXPORT, VALIDATE, IMPORT])
def test_features_batch__anonymous_401_client_token_403(anon_client, client_token_client, url):
    assert_error(post(anon_client, url, {}), 401, "AuthenticationRequired")
    assert_error(post(client_token_client, url, {}), 403, "NoAccessError")


# --- validate -------------------------------------------------------------------------------


def test_validate__every_error_and_warning__in_unleash_words(importer, shop):
    StrategyDefinitionFactory(name="custom1")
    ProjectFactory(id="other")
    data = {
        "features": [
            {"name": "shop-parent"},
            {"name": "shop-archived"},
            {"name": "fresh"},
            {"name": "fresh"},
            {"name": "stays"},
        ],
        "featureStrategies": [
            {"name": "nosuch", "featureName": "fresh"},
            {"name": "custom1", "featureName": "fresh"},
        ],
        "contextFields": [{"name": "region", "legalValues": [{"value": "mars"}]}],
        "segments": [{"id": 1, "name": "missing-segment"}],
        "dependencies": [{"feature": "fresh", "dependencies": [{"feature": "no-parent"}]}],
        "tagTypes": [],
    }
    FeatureFactory(name="stays", project_id="other")

    response = post(
        importer, VALIDATE, {"project": "shop", "environment": "development", "data": data}
    )

    assert response.status_code == 200
    assert response.json() == {
        "errors": [
            {
                "message": "We detected the following custom strategy that needs to be created "
                "first:",
                "affectedItems": ["nosuch"],
            },
            {
                "message": "We detected the following context fields that do not have matching "
                "legal values with the imported ones:",
                "affectedItems": ["region"],
            },
            {
                "message": "You cannot import a features that already exist in other projects. "
                "You already have the following features defined outside of project shop:",
                "affectedItems": ["stays (in project other)"],
            },
            {
                "message": "We detected the following features are duplicate in your import data:",
                "affectedItems": ["fresh"],
            },
            {
                "message": "We detected the following segments that need to be created first:",
                "affectedItems": ["missing-segment"],
            },
            {
                "message": "We detected the following dependencies that need to be created first:",
                "affectedItems": ["no-parent"],
            },
        ],
        "warnings": [
            {
                "message": "The following strategy types will be used in import. Please make "
                "sure the strategy type parameters are configured as in source environment:",
                "affectedItems": ["custom1"],
            },
            {
                "message": "The following features will not be imported as they are currently "
                "archived. To import them, please unarchive them first:",
                "affectedItems": ["shop-archived"],
            },
            {
                "message": "The following features already exist in this project and will be "
                "overwritten:",
                "affectedItems": ["shop-parent"],
            },
        ],
        "permissions": [],
    }


def test_validate__missing_permissions__named_as_unleash_names_them(viewer_client, editor_client):
    data = unleash_export()
    body = {"project": "default", "environment": "development", "data": data}

    by_viewer = post(viewer_client, VALIDATE, body)
    by_editor = post(editor_client, VALIDATE, body)

    assert by_viewer.json()["permissions"] == [
        {
            "message": "We detected you are missing the following permissions:",
            "affectedItems": [
                "Update feature flags",
                "Create tag types",
                "Create context fields",
                "Create feature flags",
            ],
        }
    ]
    assert by_editor.json()["permissions"] == [
        {
            "message": "We detected you are missing the following permissions:",
            "affectedItems": ["Create tag types"],
        }
    ]


@pytest.mark.parametrize(
    ("body", "paths"),
    [
        pytest.param([], ["/body"], id="not-an-object"),
        pytest.param(
            {"project": "default", "environment": "development"}, ["/body/data"], id="no-data"
        ),
        pytest.param(
            {"project": "default", "environment": "development", "data": {}},
            ["/body/data/features", "/body/data/featureStrategies", "/body/data/tagTypes"],
            id="empty-data",
        ),
        pytest.param(
            {
                "project": "default",
                "environment": "development",
                "data": {"features": [{}], "featureStrategies": [], "tagTypes": []},
            },
            ["/body/data/features/0/name"],
            id="flag-without-name",
        ),
        pytest.param(
            {
                "project": "default",
                "environment": "development",
                "data": {
                    "features": [{"name": "a b", "type": "nope"}],
                    "featureStrategies": [],
                    "tagTypes": [],
                },
            },
            ["/body/data/features/0/name", "/body/data/features/0/type"],
            id="bad-flag",
        ),
        pytest.param(
            {
                "project": "default",
                "environment": "development",
                "data": {
                    "features": [],
                    "featureStrategies": [
                        {
                            "name": "default",
                            "constraints": [{"contextName": "a", "operator": "NOPE"}],
                        }
                    ],
                    "tagTypes": [],
                },
            },
            ["/body/data/featureStrategies/0/constraints/0/operator"],
            id="bad-constraint",
        ),
    ],
)
def test_validate_and_import__body_of_another_shape__400(importer, body, paths):
    for url in (VALIDATE, IMPORT):
        error = assert_error(post(importer, url, body), 400, "ValidationError")
        assert [detail["path"] for detail in error["details"]] == paths


@pytest.mark.parametrize(
    ("project", "environment", "message"),
    [
        pytest.param(
            "nope", "development", "Active project with id nope does not exist", id="project"
        ),
        pytest.param("default", "nope", "Could not find environment nope", id="environment"),
    ],
)
def test_validate_and_import__unknown_target__404(importer, project, environment, message):
    """Unleash validates these with 200 and no word (its import then fails or writes nothing)."""
    body = {"project": project, "environment": environment, "data": unleash_export()}
    for url in (VALIDATE, IMPORT):
        error = assert_error(post(importer, url, body), 404, "NotFoundError")
        assert error["message"] == message
    assert not Feature.objects.filter(name__startswith="ie-").exists()


# --- import refusals ------------------------------------------------------------------------


def test_import__admin_token__400_as_unleash(admin_client):
    body = {"project": "default", "environment": "development", "data": unleash_export()}

    error = assert_error(post(admin_client, IMPORT, body), 400, "ValidationError")

    assert error["message"].startswith("You can't use an admin token to import features.")


def test_import__unsupported_strategy__400_nothing_written(importer):
    Segment.objects.create(name="ie-segment", constraints=[])
    data = unleash_export()
    data["featureStrategies"][0]["name"] = "nosuch"
    before = _last_event_id()

    response = post(
        importer, IMPORT, {"project": "default", "environment": "development", "data": data}
    )

    error = assert_error(response, 400, "ValidationError")
    assert error["message"] == "Some of the strategies you are trying to import are not supported."
    assert error["details"] == [{"message": "nosuch is not supported."}]
    assert _events(before) == []


def test_import__missing_segment__400(importer):
    response = post(
        importer,
        IMPORT,
        {"project": "default", "environment": "development", "data": unleash_export()},
    )

    error = assert_error(response, 400, "ValidationError")
    assert error["message"] == "Unsupported segments: ie-segment"


def test_import__lacking_permission__403_nothing_written(viewer_client):
    before = _last_event_id()
    body = {"project": "default", "environment": "development", "data": unleash_export()}

    error = assert_error(post(viewer_client, IMPORT, body), 403, "NoAccessError")

    assert "Update feature flags" in error["message"]
    assert _events(before) == []


def test_import__refused_halfway__nothing_written(importer):
    """A constraint outside its field's legal values fails at the strategy's write, after
    flags, tags and context fields were written: all of it is rolled back."""
    Segment.objects.create(name="ie-segment", constraints=[])
    ContextFieldFactory(name="ieRegion", legal_values=[{"value": "eu"}, {"value": "us"}])
    data = unleash_export()
    rollout = next(s for s in data["featureStrategies"] if s["name"] == "flexibleRollout")
    rollout["constraints"][0]["values"] = ["mars"]
    before = _last_event_id()

    response = post(
        importer, IMPORT, {"project": "default", "environment": "development", "data": data}
    )

    assert_error(response, 400, "ValidationError")
    assert _events(before) == []
    assert not Feature.objects.filter(name__startswith="ie-").exists()
    assert not TagType.objects.filter(name="ie-team").exists()


def test_import__strategy_of_a_flag_not_imported__400(importer):
    data = unleash_export()
    data["features"] = [f for f in data["features"] if f["name"] == "ie-child"]
    data["featureEnvironments"] = data["featureEnvironments"][:1]
    data["dependencies"] = []
    data["segments"] = []
    before = _last_event_id()

    response = post(
        importer, IMPORT, {"project": "default", "environment": "development", "data": data}
    )

    error = assert_error(response, 400, "ValidationError")
    assert error["message"] == "Some strategies name flags that are not in the import: ie-parent"
    assert _events(before) == []
