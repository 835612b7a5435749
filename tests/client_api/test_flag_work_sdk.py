"""The official SDKs (Python and Node, unchanged, as tests/client_api/test_sdk.py runs them)
after the everyday flag operations that change their decisions, each made over HTTP: a strategy
patched, strategies reordered, flags switched in bulk, a flag cloned, a dependency added and
removed, an archived flag revived. Each SDK decides on its next fetch."""

from __future__ import annotations

import pytest

from tests.client_api.test_sdk import (  # noqa: F401
    ALICE,
    BOB,
    FEATURES,
    FLAG,
    ONLY_ALICE,
    admin,
    call,
    evaluate,
    flag,
    node_sdk,
    strategies_url,
    turn,
)

pytestmark = [
    pytest.mark.usefixtures("seeded_rows_back_after_module"),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
]

BULK = "/api/admin/projects/default/bulk_features/environments/development"


def test_sdk__strategy_patched__its_new_audience(evaluate, admin, flag):  # noqa: F811
    strategy = call(admin, "post", strategies_url(), ONLY_ALICE)
    turn(admin, "on")
    before = evaluate([ALICE, BOB])

    patch = [{"op": "replace", "path": "/constraints/0/values/0", "value": "bob"}]
    call(admin, "patch", f"{strategies_url()}/{strategy['id']}", patch)

    assert (before, evaluate([ALICE, BOB])) == ([True, False], [False, True])


def test_sdk__strategies_reordered__first_match_gives_variant(evaluate, admin, flag):  # noqa: F811
    def everyone(variant: str) -> dict:
        return {
            "name": "flexibleRollout",
            "parameters": {"rollout": "100"},
            "variants": [
                {"name": variant, "weight": 1000, "weightType": "variable", "stickiness": "default"}
            ],
        }

    first = call(admin, "post", strategies_url(), everyone("red"))
    second = call(admin, "post", strategies_url(), everyone("blue"))
    turn(admin, "on")
    before = evaluate([ALICE, BOB], variants=True)

    order = [{"id": first["id"], "sortOrder": 2}, {"id": second["id"], "sortOrder": 1}]
    call(admin, "post", f"{strategies_url()}/set-sort-order", order)

    assert before == ["red", "red"]
    assert evaluate([ALICE, BOB], variants=True) == ["blue", "blue"]


def test_sdk__bulk_on_then_off(evaluate, admin, flag):  # noqa: F811
    call(admin, "post", f"{BULK}/on", {"features": [FLAG]})
    on = evaluate([ALICE, BOB])

    call(admin, "post", f"{BULK}/off", {"features": [FLAG]})

    assert (on, evaluate([ALICE, BOB])) == ([True, True], [False, False])


def test_sdk__clone__same_decisions_once_on(evaluate, admin, flag):  # noqa: F811
    call(admin, "post", strategies_url(), ONLY_ALICE)
    turn(admin, "on")

    call(admin, "post", f"{FEATURES}/{FLAG}/clone", {"name": "sdk-copy"})
    off = evaluate([ALICE, BOB], flag="sdk-copy")  # a copy is off everywhere, as in Unleash
    call(admin, "post", f"{FEATURES}/sdk-copy/environments/development/on")

    assert (off, evaluate([ALICE, BOB], flag="sdk-copy")) == ([False, False], [True, False])


def test_sdk__dependency_added_then_removed(evaluate, admin, flag):  # noqa: F811
    call(admin, "post", FEATURES, {"name": "sdk-parent"})
    turn(admin, "on")
    call(admin, "post", f"{FEATURES}/{FLAG}/dependencies", {"feature": "sdk-parent"})
    while_parent_off = evaluate([ALICE])

    call(admin, "delete", f"{FEATURES}/{FLAG}/dependencies/sdk-parent")

    assert (while_parent_off, evaluate([ALICE])) == ([False], [True])


def test_sdk__archived_then_revived__off_until_turned_on(evaluate, admin, flag):  # noqa: F811
    turn(admin, "on")
    call(admin, "delete", f"{FEATURES}/{FLAG}")
    archived = evaluate([ALICE])

    call(admin, "post", f"/api/admin/archive/revive/{FLAG}")
    revived = evaluate([ALICE])
    turn(admin, "on")

    assert (archived, revived, evaluate([ALICE])) == ([False], [False], [True])
