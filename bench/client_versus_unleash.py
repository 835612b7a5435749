"""The client API side by side with the real Unleash: what SDKs poll, on the same PostgreSQL
server, the same flags, the same load, alternating rounds.

    ../shared/unleash-reference/start.sh     # Unleash 8.2 on 127.0.0.1:4242
    .venv/bin/python bench/client_versus_unleash.py --rounds 3

Each server gets the same `--flags` flags through its own admin API (named `cbench-N`, in
project default; every other one enabled in development with a flexibleRollout strategy and a
constraint, every tenth also with a default strategy for one user), and a client token of every
project for development. Each round then drives `GET /api/client/features` with wrk
(`--connections`, `--duration` seconds) against flagadmin, then against Unleash: first the full
answer, then with `If-None-Match` carrying the server's ETag (304, what SDKs get almost every
time). Each load starts once the machine is quiet (bench/versus_unleash.py's `settle`).
flagadmin is served by the production stack (nginx + granian, `--workers` x `--threads`).

The bench flags are archived in Unleash at the end (`--keep` leaves them active), so that the
shared reference server answers others as it did, and revived by the next run; flags of others
are left alone (their few flags are in Unleash's answers too). Unleash 8.2 rate-limits SDK
requests (20,000 a minute per address, then 429): each of its loads starts in a fresh window,
and rates count answered requests only (a 304 counts; a 429 does not, and is reported).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness
from bench.versus_unleash import UNLEASH_TOKEN, combined, settle

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/flagadmin_bench_client_versus"
FEATURES = "/api/client/features"
PREFIX = "cbench-"
# Requests left in Unleash's rate-limit window for a load to start in it (see below).
LIMIT_LEFT = 18_000


def call(base_url: str, method: str, path: str, token: str, body: object = None):
    """(status, headers, body) of one request; the headers as the response's own message, whose
    names match in any case (granian, and so the stack, sends them in lower case)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        base_url + path,
        data=data,
        method=method,
        headers={"Authorization": token, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def checked(base_url: str, method: str, path: str, token: str, body: object = None) -> bytes:
    status, _, answer = call(base_url, method, path, token, body)
    if status >= 300:
        raise RuntimeError(f"{base_url}: {method} {path} answered {status}: {answer[:300]!r}")
    return answer


def seed_flag(base_url: str, token: str, number: int) -> None:
    name = f"{PREFIX}{number:05d}"
    project = "/api/admin/projects/default/features"
    checked(base_url, "POST", project, token, {"name": name, "type": "release"})
    if number % 2:
        return
    strategies = f"{project}/{name}/environments/development/strategies"
    constraint = {"contextName": "appName", "operator": "IN", "values": ["shop", "web"]}
    checked(
        base_url,
        "POST",
        strategies,
        token,
        {
            "name": "flexibleRollout",
            "parameters": {"rollout": str(number % 100), "stickiness": "userId", "groupId": name},
            "constraints": [constraint],
        },
    )
    if number % 10 == 0:
        checked(
            base_url,
            "POST",
            strategies,
            token,
            {
                "name": "default",
                "parameters": {},
                "constraints": [{"contextName": "userId", "operator": "IN", "values": ["alice"]}],
            },
        )
    checked(base_url, "POST", f"{project}/{name}/environments/development/on", token)


def bench_flag_names(base_url: str, token: str) -> list[str]:
    path = "/api/admin/projects/default/features"
    flags = json.loads(checked(base_url, "GET", path, token))["features"]
    return [flag["name"] for flag in flags if flag["name"].startswith(PREFIX)]


def seed(base_url: str, token: str, flags: int) -> None:
    """Exactly `flags` bench flags, active. Those archived by an earlier run are revived (and
    their environment turned on again) rather than deleted and created anew: Unleash 8.2 exits
    when a flag is deleted before it has recorded the flag's archiving, which it does after
    answering. Reviving names that are not archived does nothing."""
    wanted = [f"{PREFIX}{number:05d}" for number in range(flags)]
    active = set(bench_flag_names(base_url, token))
    archive(base_url, token, sorted(active - set(wanted)))
    missing = [name for name in wanted if name not in active]
    for start in range(0, len(missing), 500):
        body = {"features": missing[start : start + 500]}
        checked(base_url, "POST", "/api/admin/projects/default/revive", token, body)
    revived = set(bench_flag_names(base_url, token)) - active
    created = [number for number, name in enumerate(wanted) if name not in active | revived]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda number: seed_flag(base_url, token, number), created))
        list(pool.map(lambda name: turn_on(base_url, token, name), sorted(revived)))


def turn_on(base_url: str, token: str, name: str) -> None:
    if int(name.removeprefix(PREFIX)) % 2 == 0:
        path = f"/api/admin/projects/default/features/{name}/environments/development/on"
        checked(base_url, "POST", path, token)


def archive(base_url: str, token: str, names: list[str]) -> None:
    for start in range(0, len(names), 500):
        body = {"features": names[start : start + 500]}
        checked(base_url, "POST", "/api/admin/projects/default/archive", token, body)


def fresh_rate_limit_window(base_url: str, token: str) -> None:
    """Unleash 8.2 answers at most SDK_API_RATE_LIMIT_PER_MINUTE (20,000) SDK requests per
    client address in fixed one-minute windows, then 429 until the window ends: a load starts
    in a window with nearly all of it left, so that what is measured is Unleash answering."""
    _, headers, _ = call(base_url, "GET", FEATURES, token)
    headers = {name.lower(): value for name, value in headers.items()}
    if int(headers.get("ratelimit-remaining", LIMIT_LEFT)) < LIMIT_LEFT:
        time.sleep(int(headers.get("ratelimit-reset", 60)) + 1)


def client_token(base_url: str, admin: str) -> str:
    """The bench's client token of every project for development: an earlier run's, when
    the server lists it (Unleash lists secrets), else a new one."""
    listed = json.loads(checked(base_url, "GET", "/api/admin/api-tokens", admin))["tokens"]
    for token in listed:
        if token.get("tokenName") == "client-bench" and token.get("secret", "").count(".") == 1:
            return token["secret"]
    body = {
        "tokenName": "client-bench",
        "type": "client",
        "environment": "development",
        "projects": ["*"],
    }
    answer = json.loads(checked(base_url, "POST", "/api/admin/api-tokens", admin, body))
    return answer["secret"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--unleash-url", default="http://127.0.0.1:4242")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--flags", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=8, help="seconds per load and server")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--only", choices=["full", "304"], action="append")
    parser.add_argument("--keep", action="store_true", help="leave the flags active in Unleash")
    args = parser.parse_args()
    loads = args.only or ["full", "304"]

    unleash = args.unleash_url
    if call(unleash, "GET", "/api/admin/projects", UNLEASH_TOKEN)[0] != 200:
        print(f"Unleash does not answer at {unleash} (start.sh?)", file=sys.stderr)
        return 1
    harness.create_database(args.database_url)
    harness.setup_django(args.database_url)
    admin = harness.admin_token()
    # load -> server -> one (result, 0, 0) per round (no memory figures here)
    figures: dict[str, dict[str, list]] = {load: {"flagadmin": [], "unleash": []} for load in loads}
    failed = False
    with harness.serve(
        args.database_url,
        workers=args.workers,
        threads=args.threads,
        worker_class="gthread" if args.threads > 1 else "sync",
        stack="proxy",
        port=args.port,
    ) as flagadmin:
        servers = {"flagadmin": (flagadmin, admin), "unleash": (unleash, UNLEASH_TOKEN)}
        started = time.monotonic()
        tokens = {}
        for name, (base_url, secret) in servers.items():
            seed(base_url, secret, args.flags)
            tokens[name] = client_token(base_url, secret)
        harness.analyze(args.database_url)
        print(f"seeded {args.flags} flags in each server in {time.monotonic() - started:.0f} s")
        try:
            etags = {}
            for name, (base_url, _) in servers.items():
                status, headers, body = call(base_url, "GET", FEATURES, tokens[name])
                flags = [f for f in json.loads(body)["features"] if f["name"].startswith(PREFIX)]
                etags[name] = headers.get("ETag")
                print(f"{name}: {status}, {len(body)} bytes, {len(flags)} bench flags")
                if status != 200 or len(flags) != args.flags or not etags[name]:
                    return 1
                request = urllib.request.Request(
                    base_url + FEATURES,
                    headers={"Authorization": tokens[name], "If-None-Match": etags[name]},
                )
                try:
                    urllib.request.urlopen(request, timeout=60)
                    print(f"{name}: If-None-Match with its ETag did not answer 304")
                    return 1
                except urllib.error.HTTPError as error:
                    if error.code != 304:
                        raise
            for round_number in range(1, args.rounds + 1):
                for load in loads:
                    for name, (base_url, _) in servers.items():
                        headers = {"Authorization": tokens[name]}
                        if load == "304":
                            headers["If-None-Match"] = etags[name]
                        if name == "unleash":
                            fresh_rate_limit_window(base_url, tokens[name])
                        settle()
                        result = harness.run_wrk(
                            base_url + FEATURES,
                            headers=headers,
                            connections=args.connections,
                            duration_s=args.duration,
                            warmup_s=1,
                        )
                        # A 304 is not 2xx: wrk counts statuses >= 400 only.
                        figures[load][name].append((result, 0.0, 0.0))
                        failed |= not result.ok
                        print(f"round {round_number} {load:4} {name:9}: {line(result)}")
        finally:
            if not args.keep:
                archive(unleash, UNLEASH_TOKEN, bench_flag_names(unleash, UNLEASH_TOKEN))

    print(
        f"{args.rounds} rounds together, {args.connections} connections, {args.flags} flags; "
        f"flagadmin: nginx + {args.workers} granian workers x {args.threads} threads"
    )
    for load in loads:
        together = {name: combined(entries)[0] for name, entries in figures[load].items()}
        for name, result in together.items():
            print(f"  {load:4} {name:9}: {line(result)}")
        ours, theirs = together["flagadmin"], together["unleash"]
        print(
            f"  {load:4} flagadmin / Unleash: "
            f"{ours.answered_2xx_per_s / theirs.answered_2xx_per_s:.2f} x "
            f"the rate, p99 {ours.p99_ms:.1f} ms against {theirs.p99_ms:.1f} ms"
        )
    return 1 if failed else 0


def line(result: harness.WrkResult) -> str:
    text = (
        f"{result.answered_2xx_per_s:7.1f} requests/s, p50 {result.p50_ms:6.1f} ms, "
        f"p99 {result.p99_ms:6.1f} ms"
    )
    if not result.ok:
        text += f"; {result.errors} socket errors, {result.non_2xx} statuses >= 400"
    return text


if __name__ == "__main__":
    sys.exit(main())
