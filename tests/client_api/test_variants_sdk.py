"""The official SDKs (Python and Node, unchanged, as tests/client_api/test_sdk.py runs them)
after a flag's environment variants and a strategy's segments change over HTTP: each gets the new
state on its next fetch. Both SDKs announce a client specification past 4.2, so they read
segments from the top-level list (the Python SDK through Yggdrasil, Unleash's engine)."""

from __future__ import annotations

import pytest

from tests.client_api.test_sdk import FEATURES, FLAG, admin, call, evaluate, flag, node_sdk  # noqa: F401

pytestmark = [
    pytest.mark.usefixtures("seeded_rows_back_after_module"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

ALICE, BOB, CAROL = {"userId": "alice"}, {"userId": "bob"}, {"userId": "carol"}
VARIANTS = f"{FEATURES}/{FLAG}/environments/development/variants"


@pytest.fixture
def on_for_everyone(admin, flag) -> None:  # noqa: F811
    call(admin, "post", f"{FEATURES}/{FLAG}/environments/development/on")


def test_sdk__environment_variants__override_then_replaced(evaluate, admin, on_for_everyone):  # noqa: F811
    variants = [
        {
            "name": "red",
            "weight": 0,
            "weightType": "fix",
            "overrides": [{"contextName": "userId", "values": ["alice"]}],
        },
        {"name": "blue", "weight": 0, "weightType": "variable", "stickiness": "userId"},
    ]
    batch = {"variants": variants, "environments": ["development"]}
    call(admin, "put", f"{FEATURES}/{FLAG}/variants-batch", batch)
    before = evaluate([ALICE, BOB, CAROL], variants=True)

    call(admin, "put", VARIANTS, [{"name": "green", "weight": 0, "weightType": "variable"}])
    after = evaluate([ALICE, BOB, CAROL], variants=True)

    assert before == ["red", "blue", "blue"]
    assert after == ["green", "green", "green"]


def test_sdk__environment_variants__patched(evaluate, admin, on_for_everyone):  # noqa: F811
    batch = {"variants": [{"name": "blue", "weight": 0}], "environments": ["development"]}
    call(admin, "put", f"{FEATURES}/{FLAG}/variants-batch", batch)

    patch = [{"op": "replace", "path": "/0/name", "value": "violet"}]
    call(admin, "patch", VARIANTS, patch)

    assert evaluate([ALICE, BOB], variants=True) == ["violet", "violet"]


def test_sdk__segment_on_strategy__then_changed_then_removed(evaluate, admin, flag):  # noqa: F811
    only = {"contextName": "userId", "operator": "IN", "values": ["alice"]}
    segment = call(admin, "post", "/api/admin/segments", {"name": "sdk-s", "constraints": [only]})
    strategy = call(
        admin,
        "post",
        f"{FEATURES}/{FLAG}/environments/development/strategies",
        {"name": "default", "segments": [segment["id"]]},
    )
    call(admin, "post", f"{FEATURES}/{FLAG}/environments/development/on")
    with_segment = evaluate([ALICE, BOB])

    to_bob = {"name": "sdk-s", "constraints": [only | {"values": ["bob"]}]}
    call(admin, "put", f"/api/admin/segments/{segment['id']}", to_bob)
    changed = evaluate([ALICE, BOB])

    body = {
        "projectId": "default",
        "environmentId": "development",
        "strategyId": strategy["id"],
        "segmentIds": [],
    }
    call(admin, "post", "/api/admin/segments/strategies", body)
    removed = evaluate([ALICE, BOB])

    assert (with_segment, changed, removed) == ([True, False], [False, True], [True, True])


def test_python_sdk__its_header__segments_shape(admin, flag):  # noqa: F811
    # The header the Python SDK sends with every fetch: the tests above ran it on the
    # top-level list of segments.
    from rest_framework.test import APIClient
    from UnleashClient.constants import APPLICATION_HEADERS

    from flagadmin.core.models import TokenType
    from tests.factories import make_token

    sdk = APIClient()
    sdk.credentials(HTTP_AUTHORIZATION=make_token(TokenType.CLIENT, projects=["default"])[1])
    spec = APPLICATION_HEADERS["Unleash-Client-Spec"]

    body = sdk.get("/api/client/features", HTTP_UNLEASH_CLIENT_SPEC=spec).json()

    assert (body["query"]["inlineSegmentConstraints"], body["segments"]) == (False, [])
