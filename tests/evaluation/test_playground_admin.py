"""The playground in the Django admin: a context typed into a form, each flag's decision, variant
and why (the API's answers), linked from the admin's index."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.utils.html import escape

from evaluation import engine, playground
from features.models import Segment
from flagadmin.core.models import Role
from tests.factories import ProjectFactory, UserFactory

PAGE = "/admin/evaluation/playground/"
FEATURES = "/api/admin/projects/{}/features"


@pytest.fixture(autouse=True)
def fresh_engines():
    engine.clear_engines()
    playground.clear_reasons()
    yield
    engine.clear_engines()
    playground.clear_reasons()


@pytest.fixture
def staff(db) -> Client:
    client = Client()
    client.force_login(UserFactory(root_role_id=Role.ADMIN))
    return client


def flag(admin_client, name: str, *strategies: dict, project="default", on=True) -> None:
    features = FEATURES.format(project)
    for url, body in [
        (features, {"name": name}),
        *((f"{features}/{name}/environments/development/strategies", s) for s in strategies),
    ]:
        response = admin_client.post(url, json.dumps(body), content_type="application/json")
        assert response.status_code in (200, 201), response.content
    if on:
        admin_client.post(f"{features}/{name}/environments/development/on")


@pytest.fixture
def catalogue(admin_client) -> None:
    """`nordic` (country IN no, se; variant blue), `paused` (its one strategy paused, turned
    on before), `regional` (segment americas), `rollout-0`, `sleeping` (off); `theirs` in
    project `other`."""
    ProjectFactory(id="other")
    segment = Segment.objects.create(
        name="americas", constraints=[{"contextName": "region", "operator": "IN", "values": ["us"]}]
    )
    blue = {
        "name": "blue",
        "weight": 1000,
        "weightType": "variable",
        "stickiness": "default",
        "payload": {"type": "string", "value": "sky"},
    }
    nordic = {"contextName": "country", "operator": "IN", "values": ["no", "se"]}
    flag(
        admin_client,
        "nordic",
        {"name": "default", "title": "Nordics", "constraints": [nordic], "variants": [blue]},
    )
    flag(admin_client, "regional", {"name": "default", "segments": [segment.pk]})
    flag(admin_client, "rollout-0", {"name": "flexibleRollout", "parameters": {"rollout": "0"}})
    flag(admin_client, "sleeping", {"name": "default"}, on=False)
    flag(admin_client, "theirs", {"name": "default"}, project="other")


def shown(response) -> dict[str, dict]:
    return {feature["name"]: feature for feature in response.context["features"]}


def test_playground_admin__linked_from_the_index(staff):
    response = staff.get("/admin/")

    assert response.status_code == 200
    assert f'href="{PAGE}"'.encode() in response.content


def test_playground_admin__form_without_results(staff):
    response = staff.get(PAGE)

    assert response.status_code == 200
    assert response.context["features"] is None
    content = response.content.decode()
    for field in ("environment", "appName", "userId", "sessionId", "remoteAddress", "properties"):
        assert f'name="{field}"' in content
    assert 'id="playground-results"' not in content


def test_playground_admin__each_flag_with_its_decision_variant_and_why(staff, catalogue):
    query = {
        "environment": "development",
        "appName": "web",
        "userId": "u1",
        "properties": "country=no\nregion=eu",
    }

    response = staff.get(f"{PAGE}?{urlencode(query)}")

    assert response.status_code == 200
    features = shown(response)
    assert {name: (f["enabled"], f["variant"], f["why"]) for name, f in features.items()} == {
        "nordic": (True, "blue", "Strategy 1 (default “Nordics”) matched."),
        "regional": (
            False,
            None,
            "No strategy matched: strategy 1 (default): segment “americas” does not hold.",
        ),
        "rollout-0": (
            False,
            None,
            "No strategy matched: strategy 1 (flexibleRollout): its rollout or parameters leave "
            "this context out.",
        ),
        "sleeping": (False, None, "Off in development."),
        "theirs": (True, None, "Strategy 1 (default) matched."),
    }
    content = response.content.decode()
    assert '<tr class="playground-flag" data-flag="nordic">' in content
    assert "<strong>ON</strong>" in content
    assert "<code>sky</code>" in content
    assert "constraint country IN no, se: holds" in content
    assert "strategy 1 (default “Nordics”): matches" in content
    assert "strategy 1 (default): does not match" in content
    assert "segment “americas”: does not hold" in content


def test_playground_admin__failing_constraint_named(staff, catalogue):
    query = {"environment": "development", "appName": "web", "properties": "country=dk"}

    features = shown(staff.get(f"{PAGE}?{urlencode(query)}"))

    assert features["nordic"]["why"] == (
        "No strategy matched: strategy 1 (default “Nordics”): constraint country IN no, se does "
        "not hold."
    )


def test_playground_admin__projects_narrow(staff, catalogue):
    query = {"environment": "development", "appName": "web", "projects": "other"}

    assert list(shown(staff.get(f"{PAGE}?{urlencode(query)}"))) == ["theirs"]


@pytest.mark.parametrize(
    ("query", "error"),
    [
        pytest.param(
            {"currentTime": "tomorrow"},
            'The `/context/currentTime` property must match format "date-time". You sent '
            '"tomorrow".',
            id="current-time",
        ),
        pytest.param({"properties": "country"}, "Line 1 is not name=value.", id="properties"),
        pytest.param({"appName": ""}, "This field is required.", id="app-name"),
    ],
)
def test_playground_admin__invalid_context__errors_no_results(staff, catalogue, query, error):
    response = staff.get(
        f"{PAGE}?{urlencode({'environment': 'development', 'appName': 'web', **query})}"
    )

    assert response.status_code == 200
    assert response.context["features"] is None
    errors = [error for found in response.context["form"].errors.values() for error in found]
    assert error in errors
    assert escape(error) in response.content.decode()


def test_playground_admin__not_staff__sent_to_sign_in(db):
    client = Client()
    client.force_login(UserFactory(root_role_id=Role.VIEWER))

    response = client.get(PAGE)

    assert response.status_code == 302
    assert response["Location"].startswith("/admin/login/")
