"""The flag set-ups of bench/differential.py (the contexts are in bench/differential_contexts.py).

A set-up is one flag and the admin calls that bring it to the state under test; every call is
sent to both servers in the same order. Paths and bodies name the flag `{flag}` and an id kept
from an earlier answer `{s1}`, `{s2}`, ... (each server's own ids). A set-up that needs an
endpoint flagadmin may not have names it in `requires` (see `probe_calls` in
bench/differential.py): it runs only when flagadmin answers that endpoint's probe, and is
listed as not covered otherwise.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

FEATURES = "/api/admin/projects/default/features"
FLAG = f"{FEATURES}/{{flag}}"


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: Any = None
    keep: str | None = None  # name under which the answer's `id` is kept (`s1` -> `{s1}`)


@dataclass(frozen=True)
class Setup:
    slug: str
    calls: tuple[Call, ...]
    # Context fields one of which must be set for the SDKs to decide without a random draw
    # (`userId`, `sessionId`, `properties.tenant`); other contexts are not compared.
    sticky_on: tuple[str, ...] = ()
    # An endpoint flagadmin may lack (a key of bench.differential.PROBES).
    requires: str | None = None
    # Where the SDKs decide (the payload is compared in both): production too only for the
    # set-ups that write there, and a few that check it stays off.
    environments: tuple[str, ...] = ("development",)


# --- calls -------------------------------------------------------------------------------------


def create(**extra: Any) -> Call:
    return Call("POST", FEATURES, {"name": "{flag}", **extra})


def add(body: dict, env: str = "development", keep: str | None = None) -> Call:
    return Call("POST", f"{FLAG}/environments/{env}/strategies", body, keep)


def put(strategy: str, body: dict, env: str = "development") -> Call:
    return Call("PUT", f"{FLAG}/environments/{env}/strategies/{{{strategy}}}", body)


def remove(strategy: str, env: str = "development") -> Call:
    return Call("DELETE", f"{FLAG}/environments/{env}/strategies/{{{strategy}}}")


def on(env: str = "development", query: str = "") -> Call:
    return Call("POST", f"{FLAG}/environments/{env}/on{query}")


def off(env: str = "development") -> Call:
    return Call("POST", f"{FLAG}/environments/{env}/off")


def rollout(percent: Any, stickiness: str | None = "default", **extra: Any) -> dict:
    parameters: dict[str, Any] = {"rollout": percent, "groupId": "{flag}"}
    if stickiness is not None:
        parameters["stickiness"] = stickiness
    return {"name": "flexibleRollout", "parameters": parameters, **extra}


DEFAULT = {"name": "default"}


def constrained(*constraints: dict, variants: list | None = None) -> dict:
    body: dict[str, Any] = {"name": "default", "constraints": list(constraints)}
    if variants is not None:
        body["variants"] = variants
    return body


def constraint(context: str, operator: str, *values: str, **options: Any) -> dict:
    single = operator.startswith(("NUM_", "DATE_", "SEMVER_")) or operator == "REGEX"
    if single:
        return {"contextName": context, "operator": operator, "value": values[0], **options}
    return {"contextName": context, "operator": operator, "values": list(values), **options}


def variant(name: str, weight_type: str = "variable", weight: int = 0, **extra: Any) -> dict:
    return {
        "name": name,
        "weight": weight,
        "weightType": weight_type,
        "stickiness": extra.pop("stickiness", "default"),
        **extra,
    }


def setup(slug: str, *calls: Call, flag_extra: dict | None = None, **options: Any) -> Setup:
    if any("/environments/production/" in call.path for call in calls):
        options.setdefault("environments", ("development", "production"))
    return Setup(slug, (create(**(flag_extra or {})), *calls), **options)


# --- the set-ups -------------------------------------------------------------------------------

HOSTNAME = socket.gethostname()
ANY_ID = ("userId", "sessionId")


def strategy_setups() -> list[Setup]:
    found = [
        setup("default-on", add(DEFAULT), on(), environments=("development", "production")),
        setup("default-not-turned-on", add(DEFAULT)),
        setup("no-strategy-on", on(), environments=("development", "production")),
        setup("on-then-off", add(DEFAULT), on(), off()),
        setup("production-only", add(DEFAULT, "production"), on("production")),
        setup(
            "both-envs-differ",
            add(rollout("100")),
            add(rollout("0"), "production"),
            on(),
            on("production"),
        ),
    ]
    for percent in ("0", "33", "100"):
        for stickiness in ("default", "userId", "sessionId", "tenant"):
            sticky = {"default": ANY_ID, "tenant": ()}.get(stickiness, ())
            found.append(
                setup(
                    f"rollout-{percent}-{stickiness}",
                    add(rollout(percent, stickiness)),
                    on(),
                    sticky_on=sticky if percent == "33" else (),
                )
            )
    found += [
        # random draws: only the certain ends are comparable
        setup("rollout-0-random", add(rollout("0", "random")), on()),
        setup("rollout-100-random", add(rollout("100", "random")), on()),
        setup("rollout-33-random", add(rollout("33", "random")), on(), sticky_on=("never",)),
        # parameters left out: both servers fill them in (stickiness default, groupId the flag)
        setup(
            "rollout-50-bare",
            add({"name": "flexibleRollout", "parameters": {"rollout": "50"}}),
            on(),
            sticky_on=ANY_ID,
        ),
        setup(
            "rollout-33-shared-group",
            add(
                rollout("33", "userId")
                | {"parameters": {"rollout": "33", "stickiness": "userId", "groupId": "shared"}}
            ),
            on(),
        ),
        setup(
            "rollout-66-shared-group",
            add(
                {
                    "name": "flexibleRollout",
                    "parameters": {"rollout": "66", "stickiness": "userId", "groupId": "shared"},
                }
            ),
            on(),
        ),
        setup(
            "user-with-id",
            add(
                {"name": "userWithId", "parameters": {"userIds": "user-1,user-7, user-12,alice,42"}}
            ),
            on(),
        ),
        setup(
            "remote-address",
            add(
                {
                    "name": "remoteAddress",
                    "parameters": {"IPs": "10.0.0.1, 192.168.1.0/24,2001:db8::1"},
                }
            ),
            on(),
        ),
        setup(
            "hostname-match",
            add(
                {
                    "name": "applicationHostname",
                    "parameters": {"hostNames": f"nowhere.example,{HOSTNAME}"},
                }
            ),
            on(),
        ),
        setup(
            "hostname-other",
            add({"name": "applicationHostname", "parameters": {"hostNames": "nowhere.example"}}),
            on(),
        ),
        # what scripts send as numbers (Unleash coerces them)
        setup("rollout-as-number", add(rollout(45, "userId")), on()),
        setup(
            "rollout-empty-group",
            add({"name": "flexibleRollout", "parameters": {"rollout": "50", "groupId": ""}}),
            on(),
            sticky_on=ANY_ID,
        ),
        setup("rollout-50-app-name", add(rollout("50", "appName")), on()),
        setup(
            "rollout-then-renamed-default",
            add(rollout("20", "userId"), keep="s1"),
            on(),
            put("s1", {"name": "default"}),
        ),
    ]
    return found


def constraint_setups() -> list[Setup]:
    c = constraint
    cases: dict[str, list[dict]] = {
        "in-user": [c("userId", "IN", *(f"user-{n}" for n in range(0, 60, 3)))],
        "in-user-inverted": [c("userId", "IN", "user-1", "user-2", "alice", inverted=True)],
        "in-country-ci": [c("country", "IN", "no", "SE", caseInsensitive=True)],
        "not-in-app": [c("appName", "NOT_IN", "web", "checkout")],
        "not-in-env-inverted": [c("environment", "NOT_IN", "production", inverted=True)],
        "str-contains": [c("email", "STR_CONTAINS", "example")],
        "str-contains-ci": [c("email", "STR_CONTAINS", "EXAMPLE", caseInsensitive=True)],
        "str-starts-with": [c("userId", "STR_STARTS_WITH", "user-1", "admin")],
        "str-starts-with-inverted-ci": [
            c("userId", "STR_STARTS_WITH", "USER-1", inverted=True, caseInsensitive=True)
        ],
        "str-ends-with": [c("email", "STR_ENDS_WITH", ".org", ".NO")],
        "str-ends-with-ci": [c("email", "STR_ENDS_WITH", ".no", caseInsensitive=True)],
        "num-eq": [c("age", "NUM_EQ", "18")],
        "num-gt": [c("age", "NUM_GT", "18")],
        "num-gte-inverted": [c("age", "NUM_GTE", "65.5", inverted=True)],
        "num-lt": [c("age", "NUM_LT", "18")],
        "num-lte": [c("age", "NUM_LTE", "18.0")],
        "date-after": [c("currentTime", "DATE_AFTER", "2025-06-01T00:00:00.000Z")],
        "date-before": [c("currentTime", "DATE_BEFORE", "2024-01-01T12:00:00.000Z")],
        "date-after-inverted": [
            c("currentTime", "DATE_AFTER", "2022-03-04T05:06:07.000Z", inverted=True)
        ],
        "semver-eq": [c("version", "SEMVER_EQ", "1.2.3")],
        "semver-gt": [c("version", "SEMVER_GT", "1.2.3")],
        "semver-lt-prerelease": [c("version", "SEMVER_LT", "2.0.0-beta.2")],
        "semver-gt-inverted": [c("version", "SEMVER_GT", "1.10.0", inverted=True)],
        "regex": [c("userId", "REGEX", "^user-[0-9]*7$")],
        "regex-ci": [c("email", "REGEX", "^[a-z]+@EXAMPLE\\.(com|no)$", caseInsensitive=True)],
        "regex-inverted": [c("tenant", "REGEX", "^t[0-3]$", inverted=True)],
        "two-constraints": [
            c("appName", "IN", "web", "mobile-ios"),
            c("age", "NUM_GTE", "18"),
        ],
        "environment-in": [c("environment", "IN", "development", "staging")],
        "session-in": [c("sessionId", "IN", "s-1", "s-2", "s-3", "s-10")],
        "remote-address-in": [c("remoteAddress", "IN", "10.0.0.1", "192.168.1.7")],
        # a number where Unleash takes a string (it coerces)
        "num-value-as-number": [{"contextName": "age", "operator": "NUM_GT", "value": 30}],
        "in-values-as-numbers": [{"contextName": "userId", "operator": "IN", "values": [42, 7]}],
        "in-empty-values": [c("userId", "IN")],
        "not-in-empty-values": [c("userId", "NOT_IN")],
        "in-duplicates-and-spaces": [c("userId", "IN", "user-1", "user-1", " user-2", "user-3 ")],
        "date-after-date-only": [c("currentTime", "DATE_AFTER", "2025-06-01")],
        "date-before-offset": [c("currentTime", "DATE_BEFORE", "2026-01-01T00:00:00+01:00")],
        "semver-invalid-value": [c("version", "SEMVER_GT", "1.2")],
        "num-invalid-value": [c("age", "NUM_GT", "eighteen")],
        "unknown-context-field": [c("planet", "IN", "earth")],
        "single-value-with-values": [
            {"contextName": "age", "operator": "NUM_GT", "value": "18", "values": ["1"]}
        ],
    }
    # every operator once more, inverted and case-insensitive at once
    flipped = {
        "IN": c("country", "IN", "no", "SE"),
        "NOT_IN": c("appName", "NOT_IN", "WEB", "checkout"),
        "STR_CONTAINS": c("email", "STR_CONTAINS", "EXAMPLE"),
        "STR_STARTS_WITH": c("email", "STR_STARTS_WITH", "EVE"),
        "STR_ENDS_WITH": c("email", "STR_ENDS_WITH", ".NO", ".org"),
        "NUM_EQ": c("age", "NUM_EQ", "18"),
        "NUM_GT": c("age", "NUM_GT", "18"),
        "NUM_GTE": c("age", "NUM_GTE", "18"),
        "NUM_LT": c("age", "NUM_LT", "65.5"),
        "NUM_LTE": c("age", "NUM_LTE", "65.5"),
        "DATE_AFTER": c("currentTime", "DATE_AFTER", "2027-01-01T00:00:00.000Z"),
        "DATE_BEFORE": c("currentTime", "DATE_BEFORE", "2023-07-01T00:00:00.000Z"),
        "SEMVER_EQ": c("version", "SEMVER_EQ", "2.0.0-beta.1"),
        "SEMVER_GT": c("version", "SEMVER_GT", "1.2.3"),
        "SEMVER_LT": c("version", "SEMVER_LT", "1.10.0"),
    }
    for operator, found in flipped.items():
        cases[f"{operator.lower().replace('_', '-')}-inverted-ci"] = [
            found | {"inverted": True, "caseInsensitive": True}
        ]
    # both servers refuse an inverted REGEX ("REGEX operator cannot be inverted")
    cases["regex-ci-anchored"] = [c("email", "REGEX", "^(ann|EVE)@", caseInsensitive=True)]
    return [
        setup(f"constraint-{slug}", add(constrained(*constraints)), on())
        for slug, constraints in cases.items()
    ]


# A variant's own stickiness field, when it is not `default`: without it, the SDKs draw.
STICKY_VARIANTS = {
    "sticky-tenant": ("properties.tenant",),
    "sticky-user": ("userId",),
    "mixed-stickiness": ("sessionId",),
}


def variant_setups() -> list[Setup]:
    v = variant
    cases: dict[str, list[dict]] = {
        "fix-200-variable-0-0": [v("a", "fix", 200), v("b"), v("c")],
        "unsorted": [v("zeta", weight=500), v("alpha", weight=250), v("mid", weight=250)],
        "uneven-3": [v("one", weight=333), v("two", weight=333), v("three", weight=334)],
        "uneven-7": [v(f"v{n}") for n in range(7)],
        "fix-0-variable": [v("b", "fix", 0), v("a")],
        "all-fix": [v("b", "fix", 300), v("a", "fix", 700)],
        "fix-under-1000": [v("b", "fix", 100), v("a", "fix", 200)],
        "single": [v("only", weight=1000)],
        "payloads": [
            v("s", weight=500, payload={"type": "string", "value": "hello"}),
            v("j", weight=300, payload={"type": "json", "value": '{"a": 1}'}),
            v("n", weight=200, payload={"type": "number", "value": "42"}),
        ],
        "sticky-tenant": [
            v("x", weight=500, stickiness="tenant"),
            v("y", weight=500, stickiness="tenant"),
        ],
        "sticky-user": [
            v("p", weight=500, stickiness="userId"),
            v("q", weight=500, stickiness="userId"),
        ],
        "fix-1000-and-variable": [v("b", "fix", 1000), v("a")],
        "csv-payload": [v("c", weight=1000, payload={"type": "csv", "value": "a,b\n1,2"})],
        "mixed-stickiness": [v("m", weight=500, stickiness="sessionId"), v("n", weight=500)],
        "many-fix": [v("d", "fix", 100), v("c", "fix", 150), v("b"), v("a", "fix", 50), v("e")],
    }
    found = [
        setup(
            f"strategy-variants-{slug}",
            add(rollout("100", "default", variants=variants)),
            on(),
            sticky_on=STICKY_VARIANTS.get(slug, ANY_ID),
        )
        for slug, variants in cases.items()
    ]
    found.append(
        setup(
            "strategy-variants-constrained",
            add(constrained(constraint("appName", "IN", "web"), variants=[v("b"), v("a")])),
            on(),
            sticky_on=ANY_ID,
        )
    )
    # environment variants (flag-level, per environment), on a flag served to everyone. Unleash
    # 8.2 refuses them (403 "Environment variants deprecated ... Use strategy variants instead")
    # unless the flag has some already or its `enableLegacyVariants` flag is on.
    env_cases: dict[str, list[dict]] = {
        "fix-200-variable-0-0": [v("a", "fix", 200), v("b"), v("c")],
        "unsorted": [v("zeta", weight=500), v("alpha", weight=500)],
        "uneven-3": [v("one"), v("two"), v("three")],
    }
    found += [
        setup(
            f"env-variants-{slug}",
            add(DEFAULT),
            Call("PUT", f"{FLAG}/environments/development/variants", variants),
            on(),
            sticky_on=ANY_ID,
            requires="environment-variants",
        )
        for slug, variants in env_cases.items()
    ]
    return found


def lifecycle_setups() -> list[Setup]:
    # Unleash 8.2 has no userWithId strategy type: the same audience as a constraint
    user7 = constrained(constraint("userId", "IN", "user-7", "user-8"))
    return [
        setup(
            "pause-only",
            add(rollout("33", "userId"), keep="s1"),
            on(),
            put("s1", rollout("33", "userId", disabled=True)),
        ),
        setup(
            "pause-one-of-two",
            add(rollout("33", "userId"), keep="s1"),
            add(user7),
            on(),
            put("s1", rollout("33", "userId", disabled=True)),
        ),
        setup(
            "pause-then-resume",
            add(user7, keep="s1"),
            on(),
            put("s1", user7 | {"disabled": True}),
            put("s1", user7 | {"disabled": False}),
        ),
        # Unleash's PUT keeps what the body leaves out (`disabled`, `title`, `parameters`)
        setup(
            "pause-then-put-without-disabled-then-on",
            add(user7, keep="s1"),
            on(),
            put("s1", user7 | {"disabled": True}),
            put("s1", user7),
            on(),
        ),
        setup("all-disabled-then-on", add(user7 | {"disabled": True}), on()),
        setup(
            "all-disabled-then-on-activate",
            add(user7 | {"disabled": True}),
            on(query="?shouldActivateDisabledStrategies=true"),
        ),
        setup(
            "all-disabled-on-then-reenable",
            add(user7 | {"disabled": True}, keep="s1"),
            on(),
            put("s1", user7 | {"disabled": False}),
        ),
        setup(
            "bulk-on-activate",
            add(user7 | {"disabled": True}),
            Call(
                "POST",
                "/api/admin/projects/default/bulk_features/environments/development/on",
                {"features": ["{flag}"], "shouldActivateDisabledStrategies": True},
            ),
            requires="bulk-toggle",
        ),
        setup("delete-last", add(rollout("33", "userId"), keep="s1"), on(), remove("s1")),
        setup("delete-last-then-add", add(DEFAULT, keep="s1"), on(), remove("s1"), add(user7)),
        setup("delete-last-then-on", add(user7, keep="s1"), on(), remove("s1"), on()),
        setup("delete-one-of-two", add(DEFAULT, keep="s1"), add(user7), on(), remove("s1")),
        setup(
            "delete-enabled-leaving-disabled",
            add(user7 | {"disabled": True}),
            add(DEFAULT, keep="s1"),
            on(),
            remove("s1"),
        ),
        setup(
            "pause-only-in-production",
            add(DEFAULT, "production", keep="s1"),
            add(DEFAULT),
            on(),
            on("production"),
            put("s1", DEFAULT | {"disabled": True}, "production"),
        ),
        # a PUT that leaves out `parameters`: Unleash fills in the defaults again
        setup(
            "put-without-parameters",
            add(rollout("33", "userId"), keep="s1"),
            on(),
            put("s1", {"name": "flexibleRollout"}),
            sticky_on=ANY_ID,
        ),
        setup(
            "put-without-constraints",
            add(user7 | {"title": "kept?"}, keep="s1"),
            on(),
            put("s1", {"name": "default", "disabled": False}),
        ),
        setup("archive-by-delete", add(DEFAULT), on(), Call("DELETE", FLAG)),
        setup(
            "archive-batch",
            add(DEFAULT),
            on(),
            Call("POST", "/api/admin/projects/default/archive", {"features": ["{flag}"]}),
        ),
        setup(
            "sort-orders",
            add(rollout("100", "userId", sortOrder=2, variants=[variant("third", weight=1000)])),
            add(
                constrained(
                    constraint("appName", "IN", "web"), variants=[variant("first", weight=1000)]
                )
                | {"sortOrder": 0}
            ),
            add(user7 | {"sortOrder": 1, "variants": [variant("second", weight=1000)]}),
            on(),
        ),
        setup(
            "sort-orders-default",
            add(
                constrained(
                    constraint("age", "NUM_GT", "30"), variants=[variant("older", weight=1000)]
                )
            ),
            add(rollout("50", "userId", variants=[variant("rollout", weight=1000)])),
            on(),
        ),
        setup(
            "sort-order-updated",
            add(user7 | {"variants": [variant("user", weight=1000)]}, keep="s1"),
            add(rollout("100", "userId", variants=[variant("everyone", weight=1000)])),
            on(),
            put("s1", user7 | {"sortOrder": 5, "variants": [variant("user", weight=1000)]}),
        ),
        setup(
            "sort-order-set",
            add(user7 | {"variants": [variant("user", weight=1000)]}, keep="s1"),
            add(rollout("100", "userId", variants=[variant("everyone", weight=1000)]), keep="s2"),
            on(),
            Call(
                "POST",
                f"{FLAG}/environments/development/strategies/set-sort-order",
                [{"id": "{s1}", "sortOrder": 2}, {"id": "{s2}", "sortOrder": 1}],
            ),
            requires="set-sort-order",
        ),
        setup(
            "titled-disabled-and-default",
            add(DEFAULT | {"title": "off", "disabled": True}),
            add(user7),
            on(),
        ),
        setup("stale-in-create", add(DEFAULT), on(), flag_extra={"stale": True}),
        setup(
            "archive-then-revive",
            add(DEFAULT),
            on(),
            Call("POST", "/api/admin/projects/default/archive", {"features": ["{flag}"]}),
            Call("POST", "/api/admin/projects/default/revive", {"features": ["{flag}"]}),
        ),
        setup("archive-then-on", add(DEFAULT), Call("DELETE", FLAG), on()),
        setup("create-twice", add(DEFAULT), on(), create()),
        setup(
            "sort-orders-tie",
            add(DEFAULT | {"sortOrder": 3, "variants": [variant("one", weight=1000)]}),
            add(DEFAULT | {"sortOrder": 3, "variants": [variant("two", weight=1000)]}),
            add(DEFAULT | {"sortOrder": -1, "variants": [variant("zero", weight=1000)]}),
            on(),
        ),
        setup(
            "first-disabled-with-variants",
            add(DEFAULT | {"disabled": True, "variants": [variant("hidden", weight=1000)]}),
            add(DEFAULT | {"variants": [variant("shown", weight=1000)]}),
            on(),
        ),
        setup(
            "off-pause-on",
            add(user7, keep="s1"),
            on(),
            off(),
            put("s1", user7 | {"disabled": True}),
            on(),
        ),
        setup(
            "on-activate-false",
            add(user7 | {"disabled": True}),
            on(query="?shouldActivateDisabledStrategies=false"),
        ),
        setup(
            "delete-then-add-with-sort-order",
            add(DEFAULT | {"variants": [variant("a", weight=1000)]}, keep="s1"),
            add(DEFAULT | {"variants": [variant("b", weight=1000)]}),
            on(),
            remove("s1"),
            add(DEFAULT | {"sortOrder": 0, "variants": [variant("c", weight=1000)]}),
        ),
        setup(
            "impression-data",
            add(DEFAULT),
            on(),
            flag_extra={"impressionData": True, "type": "experiment"},
        ),
        # dependencies and segments: only when flagadmin has the endpoints
        setup(
            "dependency-on-parent",
            add(DEFAULT),
            on(),
            Call(
                "POST", f"{FLAG}/dependencies", {"feature": "{prefix}-default-on", "enabled": True}
            ),
            requires="dependencies",
        ),
        setup(
            "dependency-on-disabled-parent",
            add(DEFAULT),
            on(),
            Call(
                "POST",
                f"{FLAG}/dependencies",
                {"feature": "{prefix}-default-not-turned-on", "enabled": True},
            ),
            requires="dependencies",
        ),
        setup(
            "segment",
            Call(
                "POST",
                "/api/admin/segments",
                {"name": "{flag}", "constraints": [constraint("appName", "IN", "web")]},
                keep="s1",
            ),
            add(DEFAULT | {"segments": ["{s1:int}"]}),
            on(),
            requires="segments",
        ),
    ]


def all_setups() -> list[Setup]:
    return strategy_setups() + constraint_setups() + variant_setups() + lifecycle_setups()
