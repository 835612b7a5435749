"""Issue 27's round trip, live: flags set up on flagadmin, exported, imported into the real
Unleash 8.2, and both servers' `/api/client/features` compared; then the other way, flags set
up on Unleash, exported, imported into flagadmin, compared.

    .venv/bin/python bench/export_import_roundtrip.py [--unleash-url URL] [--keep]

flagadmin is served as bench/differential.py serves it (a fresh SQLite database, the production
stack); the reference at UNLEASH_URL (default http://127.0.0.1:4242) is started with
../shared/unleash-reference/start.sh when nothing answers there.

Each direction sets up, through the admin API, flags of every kind an export carries: strategies
(built-in and custom, with constraints of several operators, parameters, a title, a segment,
strategy variants of fixed and variable weights, a paused one), enablement, a stale flag,
impression data, tags of a new tag type and of `simple`, a context field with legal values
used as stickiness, in a constraint and in an override, dependencies (on a parent on and off),
and environment variants (written by the exporter's own import: both servers refuse new ones
through the API, which Unleash deprecated for strategy variants). The importer must validate
the export with no error and import it (200). Then, for those flags:
- both servers must serve the same `/api/client/features`, compared as SDKs read them (see
  `normalised`), both as older SDKs get them (segments inlined) and as SDKs announcing client
  spec 4.2 or later do (segments apart);
- the importer's export must say what the exporter's said (see `export_normalised`): tags, tag
  types, context fields and their legal values, which SDKs are not sent.

Unleash's import refuses admin tokens, so the import into Unleash signs in as its admin user
(UNLEASH_ADMIN_USER, UNLEASH_ADMIN_PASSWORD: the reference's `admin` / `unleash4all`) and uses
that session; the import into flagadmin uses a service account's token (a personal token).

Everything is named with a prefix of this run, in the `default` project's `production`
environment (Unleash OSS has no other project, and cannot add environments); the differential's
flags start with `diff`, these with `rt`. At the end the run's flags, segment, context fields,
tag types, tags, strategy type and client tokens are deleted from Unleash, its session is
closed, and a last look checks that nothing of the run is left there.

Prints one line per direction and `export-import round trip: N flags compared, M differ`;
exits 1 when a flag differs, a call fails or something is left on Unleash, 2 when it could not
run (no reference, a server that does not start).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root

from bench.differential import (
    UNLEASH_ADMIN_TOKEN,
    CannotRun,
    first_difference,
    flagadmin,
    reference,
)

PROJECT = "default"
ENVIRONMENT = "production"
# The spec version from which Unleash sends segments apart from the strategies.
SEGMENTS_APART = "4.2.0"
# The flags each direction sets up: a parent (on), a child (on, stale, depends on the parent being
# on), a flag with a paused strategy and environment variants (on), one off (depends on the
# parent being off).
FLAGS = ("parent", "child", "paused", "off")
SIDES = ("fa", "un")


class Failed(Exception):
    """A call the round trip needs did not succeed (exit status 1)."""


# --- HTTP ----------------------------------------------------------------------------------


@dataclass
class Client:
    """One server as one caller: an `Authorization` header or a session cookie."""

    name: str
    base: str
    headers: dict[str, str]
    # Unleash allows some endpoints (sign-in: 10) only so many calls a minute: a 429 is waited
    # out this many times before it counts as an answer.
    patience: int = 2

    def call(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any, Any]:
        """(status, parsed JSON body or text, response headers); a refused connection raises."""
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(self.patience + 1):
            request = urllib.request.Request(f"{self.base}{path}", data=data, method=method)
            for key, value in {**self.headers, **(headers or {})}.items():
                request.add_header(key, value)
            if data is not None:
                request.add_header("Content-Type", "application/json")
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    status, raw, answer_headers = response.status, response.read(), response.headers
            except urllib.error.HTTPError as error:
                status, raw, answer_headers = error.code, error.read(), error.headers
            except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
                raise CannotRun(
                    f"{self.name} stopped answering ({method} {path}): {error}"
                ) from None
            if status != 429 or attempt == self.patience:
                break
            retry_after = str(answer_headers.get("Retry-After") or "")
            wait = int(retry_after) if retry_after.isdigit() else 61
            print(f"{self.name}: 429 on {method} {path}, waiting {wait} s", flush=True)
            time.sleep(wait)
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode(errors="replace")
        return status, parsed, answer_headers

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        """The body of a call that must succeed."""
        status, answer, _ = self.call(method, path, body)
        if status >= 300:
            raise Failed(f"{self.name}: {method} {path} answered {status}: {str(answer)[:500]}")
        return answer


def unleash_session(base: str, username: str, password: str) -> Client:
    """Unleash as its admin user, signed in with a password: the session cookie it sets."""
    anonymous = Client("unleash", base, {})
    status, answer, headers = anonymous.call(
        "POST", "/auth/simple/login", {"username": username, "password": password}
    )
    if status != 200:
        raise CannotRun(f"unleash: signing in as {username!r} answered {status}: {answer}")
    cookies = [
        cookie.split(";", 1)[0]
        for cookie in headers.get_all("Set-Cookie") or []
        if cookie.startswith("unleash-session=")
    ]
    if not cookies:
        raise CannotRun("unleash: signing in set no unleash-session cookie")
    return Client("unleash (admin user)", base, {"Cookie": cookies[0]})


def flagadmin_personal_token(admin: Client, prefix: str) -> Client:
    """flagadmin through a personal token of an Admin service account (an import, as on
    Unleash, is refused to admin tokens)."""
    account = admin.ok(
        "POST",
        "/api/admin/service-account",
        {"username": f"{prefix}-importer", "name": "round trip", "rootRole": 1},
    )
    token = admin.ok(
        "POST", f"/api/admin/service-account/{account['id']}/token", {"description": "import"}
    )
    return Client("flagadmin (service account)", admin.base, {"Authorization": token["secret"]})


# --- what each direction sets up -----------------------------------------------------------


@dataclass
class Names:
    """The names one direction uses: `side` is `fa` (set up on flagadmin) or `un` (on
    Unleash). The segment and the strategy type are shared: an import matches a segment by
    name and needs the strategy type, which neither server's import creates."""

    prefix: str
    side: str

    @property
    def flag_prefix(self) -> str:
        return f"{self.prefix}-{self.side}-"

    def flag(self, name: str) -> str:
        return f"{self.flag_prefix}{name}"

    def all_flags(self) -> list[str]:
        return [self.flag(name) for name in FLAGS]

    @property
    def region(self) -> str:
        return f"{self.prefix}-{self.side}-region"

    @property
    def team(self) -> str:
        return f"{self.prefix}-{self.side}-team"

    @property
    def segment(self) -> str:
        return f"{self.prefix}-segment"

    @property
    def strategy(self) -> str:
        return f"{self.prefix}-custom"

    @property
    def simple_tag(self) -> str:
        return f"{self.prefix}-{self.side}"


def shared_setup(server: Client, names: Names) -> None:
    """The segment and the custom strategy type, the same on both servers."""
    server.ok(
        "POST",
        "/api/admin/segments",
        {
            "name": names.segment,
            "description": "beta users",
            "constraints": [{"contextName": "userId", "operator": "IN", "values": ["1", "2", "3"]}],
        },
    )
    server.ok(
        "POST",
        "/api/admin/strategies",
        {
            "name": names.strategy,
            "description": "a custom strategy",
            "parameters": [
                {"name": "percentage", "type": "percentage", "description": "", "required": False},
                {"name": "teams", "type": "list", "description": "teams", "required": True},
            ],
        },
    )


def segment_id(server: Client, name: str) -> int:
    segments = server.ok("GET", "/api/admin/segments")["segments"]
    return next(segment["id"] for segment in segments if segment["name"] == name)


def set_up(server: Client, names: Names, importer: Client) -> list[str]:
    """The flags of one direction on `server`, every kind an export carries; their names.
    `importer`: `server` as a person, who imports the environment variants. Both servers
    refuse new environment variants through the API (Unleash 8.2 deprecated them for strategy
    variants) but still import them, as flags moved from older servers carry them."""
    flags = f"/api/admin/projects/{PROJECT}/features"
    env = ENVIRONMENT
    server.ok(
        "POST",
        "/api/admin/context",
        {
            "name": names.region,
            "description": "Region",
            "stickiness": True,
            "legalValues": [{"value": "eu", "description": "Europe"}, {"value": "us"}],
        },
    )
    server.ok("POST", "/api/admin/tag-types", {"name": names.team, "description": "Owning team"})
    segment = segment_id(server, names.segment)
    parent, child, paused, off = names.all_flags()
    server.ok(
        "POST",
        flags,
        {"name": parent, "type": "release", "description": "Parent", "impressionData": True},
    )
    server.ok("POST", flags, {"name": child, "type": "experiment", "description": "Child"})
    server.ok("POST", flags, {"name": paused, "type": "operational"})
    server.ok("POST", flags, {"name": off, "type": "kill-switch", "description": "Off"})

    def strategy(flag: str, body: dict) -> None:
        server.ok("POST", f"{flags}/{flag}/environments/{env}/strategies", body)

    strategy(
        parent,
        {
            "name": "flexibleRollout",
            "title": "Europe, 40 %",
            "parameters": {"rollout": "40", "stickiness": names.region, "groupId": parent},
            "constraints": [
                {"contextName": names.region, "operator": "IN", "values": ["eu"]},
                {
                    "contextName": "email",
                    "operator": "STR_ENDS_WITH",
                    "values": ["@Example.com"],
                    "caseInsensitive": True,
                },
            ],
            "segments": [segment],
            "variants": [
                {
                    "name": "blue",
                    "weight": 700,
                    "weightType": "fix",
                    "stickiness": "default",
                    "payload": {"type": "json", "value": '{"colour": "blue"}'},
                },
                {
                    "name": "green",
                    "weight": 300,
                    "weightType": "variable",
                    "stickiness": "default",
                    "payload": {"type": "string", "value": "green"},
                },
            ],
        },
    )
    strategy(parent, {"name": "applicationHostname", "parameters": {"hostNames": "a.example,b"}})
    strategy(
        child,
        {
            "name": names.strategy,
            "parameters": {"percentage": "25", "teams": "red,blue"},
            "constraints": [
                {"contextName": "userId", "operator": "NUM_GT", "value": "5"},
                {"contextName": "appName", "operator": "IN", "values": ["web"], "inverted": True},
            ],
        },
    )
    strategy(
        child,
        {
            "name": "default",
            "parameters": {},
            "constraints": [
                {
                    "contextName": "currentTime",
                    "operator": "DATE_AFTER",
                    "value": "2025-01-01T00:00:00.000Z",
                }
            ],
        },
    )
    strategy(paused, {"name": "default", "parameters": {}, "disabled": True})
    strategy(
        paused,
        {
            "name": "remoteAddress",
            "parameters": {"IPs": "10.0.0.1,192.168.0.0/16"},
            "constraints": [{"contextName": "version", "operator": "SEMVER_GT", "value": "1.2.3"}],
        },
    )
    strategy(off, {"name": "default", "parameters": {}})
    server.ok("POST", f"{flags}/{child}/dependencies", {"feature": parent, "enabled": True})
    server.ok("POST", f"{flags}/{off}/dependencies", {"feature": parent, "enabled": False})
    server.ok("POST", f"/api/admin/projects/{PROJECT}/stale", {"features": [child], "stale": True})
    server.ok("POST", f"/api/admin/features/{parent}/tags", {"type": names.team, "value": "core"})
    server.ok(
        "POST", f"/api/admin/features/{child}/tags", {"type": "simple", "value": names.simple_tag}
    )
    for flag in (parent, child, paused):
        server.ok("POST", f"{flags}/{flag}/environments/{env}/on")
    with_variants = export(server, [paused])
    for environment in with_variants["featureEnvironments"]:
        environment["variants"] = [
            {
                "name": "a",
                "weight": 500,
                "weightType": "variable",
                "stickiness": names.region,
                "payload": {"type": "string", "value": "A"},
                "overrides": [{"contextName": names.region, "values": ["us"]}],
            },
            {"name": "b", "weight": 200, "weightType": "fix", "stickiness": "default"},
            {"name": "c", "weight": 0, "weightType": "variable", "stickiness": "default"},
        ]
    import_into(importer, with_variants)
    return [parent, child, paused, off]


# --- export, import ------------------------------------------------------------------------


def export(server: Client, flags: list[str]) -> dict:
    return server.ok(
        "POST", "/api/admin/features-batch/export", {"environment": ENVIRONMENT, "features": flags}
    )


def import_into(server: Client, document: dict) -> list[str]:
    """Validate (no error allowed) and import `document`; the warnings validation gave."""
    body = {"project": PROJECT, "environment": ENVIRONMENT, "data": document}
    validation = server.ok("POST", "/api/admin/features-batch/validate", body)
    if validation.get("errors") or validation.get("permissions"):
        raise Failed(f"{server.name}: validation refused the export: {json.dumps(validation)}")
    server.ok("POST", "/api/admin/features-batch/import", body)
    return [
        f"{warning['message']} ({', '.join(warning['affectedItems'])})"
        for warning in validation.get("warnings", [])
    ]


# --- the client payload ----------------------------------------------------------------------


def client_token(admin: Client, prefix: str) -> str:
    """A client token of the environment on `admin`'s server."""
    return admin.ok(
        "POST",
        "/api/admin/api-tokens",
        {
            "tokenName": f"{prefix}-client",
            "type": "client",
            "environment": ENVIRONMENT,
            "projects": [PROJECT],
        },
    )["secret"]


def constraint_as_read(constraint: dict) -> dict:
    """A constraint as SDKs read it. Unleash serves a constraint with the keys it was stored
    with, flagadmin with every key: an absent `inverted` or `caseInsensitive` and `false` are
    the same to every SDK, and so are an absent `values` and `[]` beside a single `value`
    (which SDKs then read alone)."""
    constraint = {"caseInsensitive": False, "inverted": False, **constraint}
    if "value" in constraint and not constraint.get("values"):
        constraint["values"] = []
    return constraint


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def normalised(payload: dict, prefix: str) -> dict[str, dict]:
    """{flag: flag as SDKs read it} for the flags of /api/client/features named with `prefix`.

    - Flags by name: each server lists them in its own order, and SDKs look them up by name.
    - Keys whose value is null left out: one server leaves out what the other serves as null,
      and SDKs read both as absent.
    - Strategy `id`s left out: each server gives its strategies ids of its own, and SDKs use
      them for nothing but metrics.
    - Strategies compared as a set (sorted by their content): the export carries no strategy
      order (Unleash 8.2 writes none, and neither does flagadmin, in its format), and Unleash's
      import creates a flag's strategies concurrently, so they end in the order their writes
      happen to finish, not the export's. What this can hide (the first matching strategy
      gives the variant): docs/export-import.md.
    - Segment ids (4.2 payloads) replaced by the segment they name, from the payload's own
      `segments` list: each server numbers its segments itself; the segment's name and
      constraints are what an SDK evaluates.
    - Constraints as in `constraint_as_read`.
    - Dependencies once each, and an empty `variants` of a dependency left out: Unleash
      repeats a child's dependency once for each of the child's strategies (a join in its
      client query) and leaves `variants` out of a dependency on a parent being off; SDKs
      require every dependency (a repeat decides nothing new) and look at its variants only
      when there are some.
    """
    segments = {
        segment["id"]: {
            "name": segment["name"],
            "constraints": [constraint_as_read(c) for c in segment.get("constraints", [])],
        }
        for segment in payload.get("segments", [])
    }
    flags = {}
    for flag in payload.get("features", []):
        if not flag["name"].startswith(prefix):
            continue
        flag = {key: value for key, value in copy.deepcopy(flag).items() if value is not None}
        strategies = []
        for strategy in flag.get("strategies", []):
            strategy = {k: v for k, v in strategy.items() if k != "id" and v is not None}
            strategy["constraints"] = [
                constraint_as_read(c) for c in strategy.get("constraints", [])
            ]
            if "segments" in strategy:
                strategy["segments"] = [
                    segments.get(s, f"unknown segment {s}") for s in strategy["segments"]
                ]
            strategies.append(strategy)
        flag["strategies"] = sorted(strategies, key=canonical)
        if "dependencies" in flag:
            dependencies = {}
            for dependency in flag["dependencies"]:
                if not dependency.get("variants"):
                    dependency.pop("variants", None)
                dependencies.setdefault(canonical(dependency), dependency)
            flag["dependencies"] = list(dependencies.values())
        flags[flag["name"]] = flag
    return flags


def served(server: Client, token: str, prefix: str, spec: str | None) -> dict[str, dict]:
    headers = {"Authorization": token} | ({"Unleash-Client-Spec": spec} if spec else {})
    status, body, _ = server.call(
        "GET", f"/api/client/features?namePrefix={prefix}", headers=headers
    )
    if status != 200:
        raise Failed(f"{server.name}: GET /api/client/features answered {status}: {body}")
    return normalised(body, prefix)


def settled(
    servers: list[tuple[Client, str]], prefix: str, expected: list[str], spec: str | None
) -> list[dict[str, dict]]:
    """Each server's flags once every expected flag is served and two reads 1 s apart agree:
    Unleash serves SDKs from a cache it refreshes when its revision moves, a moment after a
    write."""
    previous = None
    for _ in range(30):
        current = [served(server, token, prefix, spec) for server, token in servers]
        if current == previous and all(sorted(flags) == sorted(expected) for flags in current):
            return current
        previous = current
        time.sleep(1.0)
    return current


def compare(
    title: str,
    servers: list[tuple[Client, str]],
    prefix: str,
    expected: list[str],
    record: dict[str, Any],
) -> tuple[int, list[str]]:
    """(flags compared, differences) between the two servers' payloads, in both spec modes;
    the payloads compared go into `record`."""
    differences = []
    for spec in (None, SEGMENTS_APART):
        exporter, importer = settled(servers, prefix, expected, spec)
        mode = f"spec {spec}" if spec else "no spec"
        record[f"{title}, {mode}"] = {"exporter": exporter, "importer": importer}
        for flag in expected:
            if flag not in exporter or flag not in importer:
                differences.append(f"{title}, {mode}: {flag} not served by both")
                continue
            found = first_difference(exporter[flag], importer[flag])
            if found:
                differences.append(f"{title}, {mode}: {flag}{found} (exporter != importer)")
    return len(expected), differences


def export_normalised(document: dict) -> dict:
    """An export as what it says, for comparing one server's export with the other's export
    of the same flags after the import: the client payload shows no tags, tag types, context
    fields or legal values, this does.

    - Every list sorted by its content: each server writes rows in its own order.
    - Strategy ids left out and strategies compared as a set, as in `normalised`.
    - Segment ids replaced by their names (from the document's own `segments`), and the
      segments list by the names: an import matches segments by name, each server numbers
      its own.
    - Constraints as in `constraint_as_read`.
    - Tag types and context fields that are not the run's (`simple`, `userId`, ...) by name
      only: an import creates the ones the importer lacks and leaves those it has as they
      are, so their descriptions are each server's own.
    """
    document = copy.deepcopy(document)
    segments = {segment["id"]: segment["name"] for segment in document.get("segments", [])}
    for strategy in document.get("featureStrategies", []):
        strategy.pop("id", None)
        strategy["constraints"] = [constraint_as_read(c) for c in strategy.get("constraints", [])]
        strategy["segments"] = sorted(segments.get(s, f"unknown {s}") for s in strategy["segments"])
    document["segments"] = sorted(segments.values())
    prefix = next(iter(document.get("features", [])), {}).get("name", "").split("-")[0]
    for key in ("tagTypes", "contextFields"):
        document[key] = [
            item if item["name"].startswith(prefix) else {"name": item["name"]}
            for item in document.get(key, [])
        ]
    return {
        key: sorted(value, key=canonical) if isinstance(value, list) else value
        for key, value in document.items()
    }


def compare_exports(title: str, before: dict, after: dict) -> list[str]:
    """Where the importer's export of the flags differs from the exporter's."""
    found = first_difference(export_normalised(before), export_normalised(after))
    return [f"{title}, export: {found} (exporter != importer)"] if found else []


@dataclass
class Side:
    """One server in a round trip: its admin token, a person (who may import), and a client
    token of the environment."""

    name: str
    admin: Client
    person: Client
    client_token: str


def round_trip(
    exporter: Side, importer: Side, names: Names, record: dict[str, Any]
) -> tuple[int, list[str]]:
    """Flags set up on `exporter`, exported, imported into `importer`, then both servers'
    client payloads and exports of those flags compared: (flags compared, differences)."""
    title = f"{exporter.name} -> {importer.name}"
    flags = set_up(exporter.admin, names, exporter.person)
    record[f"{exporter.name}'s export"] = document = export(exporter.admin, flags)
    warnings = import_into(importer.person, document)
    count, found = compare(
        title,
        [(exporter.admin, exporter.client_token), (importer.admin, importer.client_token)],
        names.flag_prefix,
        flags,
        record,
    )
    found += compare_exports(title, document, export(importer.admin, flags))
    print(
        f"{title}: {count} flags, {len(found)} differences"
        f" (validation warnings: {'; '.join(warnings) or 'none'})",
        flush=True,
    )
    return count, found


# --- cleaning up Unleash -------------------------------------------------------------------


@dataclass
class Cleanup:
    """Deletes what a run made on Unleash, and says what is left."""

    unleash: Client
    prefix: str
    client_tokens: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        for _ in range(2):
            status, answer, _ = self.unleash.call(method, path, body)
            if status < 300:
                return answer
            time.sleep(1)
        self.failed.append(f"{method} {path}: {status} {str(answer)[:200]}")
        return None

    def flags(self) -> list[str]:
        return [flag for side in SIDES for flag in Names(self.prefix, side).all_flags()]

    def ours(self, name: Any) -> bool:
        return str(name).startswith(f"{self.prefix}-")

    def run(self) -> list[str]:
        """Archive and delete the run's flags, then its segment, context fields, tag types and
        tags, strategy type and client tokens (in that order: each is refused while a flag
        still uses it). Returns the calls that failed and what is left."""
        project = f"/api/admin/projects/{PROJECT}"
        listed = self.call("GET", f"{project}/features") or {}
        active = [f["name"] for f in listed.get("features", []) if self.ours(f["name"])]
        if active:
            self.call("POST", f"{project}/archive", {"features": active})
        # Unleash 8.2 lists archived flags only through its search, which it allows 15 times a
        # minute: the run's flags are deleted by name (a name never created is passed over).
        self.call(
            "POST", f"{project}/delete", {"features": sorted(set(self.flags()) | set(active))}
        )
        for segment in (self.call("GET", "/api/admin/segments") or {}).get("segments", []):
            if self.ours(segment["name"]):
                self.call("DELETE", f"/api/admin/segments/{segment['id']}")
        for context in self.call("GET", "/api/admin/context") or []:
            if self.ours(context["name"]):
                self.call("DELETE", f"/api/admin/context/{context['name']}")
        for tag in (self.call("GET", "/api/admin/tags") or {}).get("tags", []):
            if self.ours(tag["type"]) or self.ours(tag["value"]):
                path = f"/api/admin/tags/{tag['type']}/{urllib.parse.quote(tag['value'], safe='')}"
                self.call("DELETE", path)
        for tag_type in (self.call("GET", "/api/admin/tag-types") or {}).get("tagTypes", []):
            if self.ours(tag_type["name"]):
                self.call("DELETE", f"/api/admin/tag-types/{tag_type['name']}")
        for strategy in (self.call("GET", "/api/admin/strategies") or {}).get("strategies", []):
            if self.ours(strategy["name"]):
                self.call("DELETE", f"/api/admin/strategies/{strategy['name']}")
        for token in self.client_tokens:
            self.call("DELETE", f"/api/admin/api-tokens/{urllib.parse.quote(token, safe='')}")
        return self.failed + self.left()

    def left(self) -> list[str]:
        """What of the run Unleash still has, by every list that could hold it."""
        project = f"/api/admin/projects/{PROJECT}"
        found = []
        lists = {
            "flag": (f"{project}/features", "features", "name"),
            "segment": ("/api/admin/segments", "segments", "name"),
            "context field": ("/api/admin/context", None, "name"),
            "tag": ("/api/admin/tags", "tags", "value"),
            "tag type": ("/api/admin/tag-types", "tagTypes", "name"),
            "strategy type": ("/api/admin/strategies", "strategies", "name"),
            "API token": ("/api/admin/api-tokens", "tokens", "tokenName"),
        }
        for kind, (path, key, name) in lists.items():
            status, body, _ = self.unleash.call("GET", path)
            if status != 200:
                found.append(f"cannot list {kind}s: GET {path} answered {status}")
                continue
            for item in body if key is None else body.get(key, []):
                if self.ours(item.get(name)) or (kind == "tag" and self.ours(item.get("type"))):
                    found.append(f"left on Unleash: {kind} {item.get(name)}")
        for flag in self.flags():  # archived or not: Unleash refuses a name it still has
            status, body, _ = self.unleash.call(
                "POST", "/api/admin/features/validate", {"name": flag}
            )
            if status != 200:
                found.append(f"left on Unleash: flag {flag} ({status} {str(body)[:100]})")
        return found


# --- the run ---------------------------------------------------------------------------------


def run(arguments: argparse.Namespace) -> int:
    started = time.monotonic()
    unleash_base = reference(arguments.unleash_url)
    prefix = f"rt{datetime.now(UTC):%m%d%H%M%S}{secrets.token_hex(2)}"
    unleash = Client("unleash", unleash_base, {"Authorization": arguments.unleash_token})
    session = unleash_session(unleash_base, arguments.unleash_user, arguments.unleash_password)
    cleanup = Cleanup(unleash, prefix)
    counted, differences, problems = 0, [], []
    record: dict[str, Any] = {}
    try:
        with flagadmin(Path(arguments.flagadmin_root)) as (base, token):
            fa_admin = Client("flagadmin", base, {"Authorization": token})
            fa_personal = flagadmin_personal_token(fa_admin, prefix)
            fa_client = client_token(fa_admin, prefix)
            un_client = client_token(unleash, prefix)
            cleanup.client_tokens.append(un_client)
            for server in (fa_admin, unleash):
                shared_setup(server, Names(prefix, "fa"))

            fa = Side("flagadmin", fa_admin, fa_personal, fa_client)
            un = Side("Unleash", unleash, session, un_client)
            for exporter, importer, names in ((fa, un, "fa"), (un, fa, "un")):
                count, found = round_trip(exporter, importer, Names(prefix, names), record)
                counted, differences = counted + count, differences + found
    except Failed as error:
        problems.append(str(error))
    finally:
        if arguments.keep:
            print(f"kept on Unleash: everything named {prefix}-*")
        else:
            try:
                problems += cleanup.run()
            except Exception as error:  # never hide the run's own error
                problems.append(f"clean-up: {error!r}")
        session.call("POST", "/logout")
    for line in differences + problems:
        print(line)
    if arguments.record:
        Path(arguments.record).write_text(json.dumps(record, indent=1))
    print(
        f"export-import round trip: {counted} flags compared, {len(differences)} differ"
        f" ({time.monotonic() - started:.0f} s, prefix {prefix})"
    )
    return 1 if differences or problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--unleash-url", default=os.environ.get("UNLEASH_URL", "http://127.0.0.1:4242")
    )
    parser.add_argument(
        "--unleash-token", default=os.environ.get("UNLEASH_ADMIN_TOKEN", UNLEASH_ADMIN_TOKEN)
    )
    parser.add_argument("--unleash-user", default=os.environ.get("UNLEASH_ADMIN_USER", "admin"))
    parser.add_argument(
        "--unleash-password", default=os.environ.get("UNLEASH_ADMIN_PASSWORD", "unleash4all")
    )
    parser.add_argument(
        "--flagadmin-root",
        default=str(Path(__file__).resolve().parent.parent),
        help="Serve flagadmin from this copy of the repository (default: this one).",
    )
    parser.add_argument(
        "--record", help="Also write both exports and the payloads compared, as JSON, to this file."
    )
    parser.add_argument(
        "--keep", action="store_true", help="Leave the run's flags on Unleash (to look at them)."
    )
    arguments = parser.parse_args()
    try:
        return run(arguments)
    except CannotRun as error:
        print(f"export-import round trip: cannot run: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
