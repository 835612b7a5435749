"""The Frontend API side by side with the real Unleash: what browsers and mobile apps call, on
the same PostgreSQL server, the same flags, the same requests, alternating rounds.

    ../shared/unleash-reference/start.sh     # Unleash 8.2 on 127.0.0.1:4242
    .venv/bin/python bench/frontend_versus_unleash.py --rounds 3
    .venv/bin/python bench/frontend_versus_unleash.py --compare-only   # the bodies only

Each server gets the same `--flags` flags through its own admin API (`fbench-NNNNN`, project
default); every twentieth (100 of 2,000) is on in development with one of several strategy
shapes in turn (a default strategy; a 50 % rollout by userId; a constraint on a `country`
property; a strategy with three variants and payloads; two strategies; a constraint on
`userId` inverted; a remoteAddress strategy), the others have a strategy and are off. A
frontend token of every project for development on each.

First the answers are compared: the same `--compare` requests (a context each, half by GET
with the context in the query, half by POST) to both servers, bodies equal once the toggles
are sorted by name (Unleash lists them in its database's row order) and reduced to the bench's
flags (the shared reference holds others' flags too). Then each round drives GET /api/frontend
with wrk (`--connections`, `--duration` s) against flagadmin, then against Unleash, each load
once the machine is quiet, in two loads: `returning`, 1,000 visitors each asking with its own
session (as the browser SDK does, which keeps its `sessionId`), and `new`, every request a new
session, so that no answer is asked for twice.
flagadmin is served by the production stack (nginx + granian, `--workers` x `--threads`).
Memory is sampled during each load: per app server worker (RSS and PSS), and Unleash's process.

Unleash 8.2 answers at most 20,000 SDK requests a minute per address on /api/client and
/api/frontend together, then 429: each of its loads starts in a fresh window, rates count the
requests answered 2xx only, and a load that met 429s says so. The bench flags are archived in
Unleash at the end (`--keep` leaves them active) and revived by the next run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness
from bench.client_versus_unleash import archive, call, checked
from bench.versus_unleash import (
    UNLEASH_PID_FILE,
    UNLEASH_TOKEN,
    MemorySampler,
    combined,
    memory_kib,
    settle,
)

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/flagadmin_bench_frontend_versus"
FRONTEND = "/api/frontend"
PROJECT = "/api/admin/projects/default/features"
PREFIX = "fbench-"
TOKEN_NAME = "frontend-bench"
ENABLED_EVERY = 20
LIMIT_LEFT = 18_000

COUNTRIES = ["no", "se", "dk", "fi"]


def variant(name: str, value: str) -> dict:
    return {
        "name": name,
        "weight": 0,
        "weightType": "variable",
        "stickiness": "default",
        "payload": {"type": "json", "value": value},
    }


def rollout(percent: int, stickiness: str = "default") -> dict:
    return {
        "name": "flexibleRollout",
        "parameters": {"rollout": str(percent), "stickiness": stickiness, "groupId": "g"},
    }


# The strategy shapes of the enabled flags, in turn.
SHAPES: list[list[dict]] = [
    [{"name": "default", "parameters": {}}],
    [rollout(50, "userId")],
    [
        {
            **rollout(100),
            "constraints": [{"contextName": "country", "operator": "IN", "values": ["no", "se"]}],
        }
    ],
    [{**rollout(100), "variants": [variant(v, f'{{"v":"{v}"}}') for v in ("a", "b", "c")]}],
    [
        {
            **rollout(100),
            "constraints": [{"contextName": "country", "operator": "IN", "values": ["dk"]}],
        },
        rollout(30, "userId"),
    ],
    [
        {
            **rollout(100),
            "constraints": [
                {
                    "contextName": "userId",
                    "operator": "STR_STARTS_WITH",
                    "values": ["user-1"],
                    "inverted": True,
                }
            ],
        }
    ],
    [{"name": "remoteAddress", "parameters": {"IPs": "127.0.0.1, 10.0.0.0/8"}}],
]


def flag_name(number: int) -> str:
    return f"{PREFIX}{number:05d}"


def seed_flag(base_url: str, token: str, number: int) -> None:
    name = flag_name(number)
    checked(base_url, "POST", PROJECT, token, {"name": name, "type": "release"})
    strategies = f"{PROJECT}/{name}/environments/development/strategies"
    enabled = number % ENABLED_EVERY == 0
    shape = SHAPES[(number // ENABLED_EVERY) % len(SHAPES)] if enabled else [rollout(50)]
    for strategy in shape:
        checked(base_url, "POST", strategies, token, strategy)
    if enabled:
        checked(base_url, "POST", f"{PROJECT}/{name}/environments/development/on", token)


def bench_flag_names(base_url: str, token: str) -> list[str]:
    flags = json.loads(checked(base_url, "GET", PROJECT, token))["features"]
    return [flag["name"] for flag in flags if flag["name"].startswith(PREFIX)]


def seed(base_url: str, token: str, flags: int) -> None:
    """Exactly `flags` bench flags, active, as `seed_flag` makes them: those archived by an
    earlier run revived (and the enabled ones turned on again), the missing ones created."""
    wanted = [flag_name(number) for number in range(flags)]
    active = set(bench_flag_names(base_url, token))
    archive(base_url, token, sorted(active - set(wanted)))
    missing = [name for name in wanted if name not in active]
    for start in range(0, len(missing), 500):
        body = {"features": missing[start : start + 500]}
        checked(base_url, "POST", "/api/admin/projects/default/revive", token, body)
    revived = set(bench_flag_names(base_url, token)) - active
    created = [number for number, name in enumerate(wanted) if name not in active | revived]
    on_again = [name for name in sorted(revived) if int(name[len(PREFIX) :]) % ENABLED_EVERY == 0]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda number: seed_flag(base_url, token, number), created))
        list(
            pool.map(
                lambda name: checked(
                    base_url, "POST", f"{PROJECT}/{name}/environments/development/on", token
                ),
                on_again,
            )
        )


def frontend_token(base_url: str, admin: str) -> str:
    """The bench's frontend token of every project for development: an earlier run's when the
    server lists its secret (Unleash does), else a new one."""
    listed = json.loads(checked(base_url, "GET", "/api/admin/api-tokens", admin))["tokens"]
    for token in listed:
        if token.get("tokenName") == TOKEN_NAME and token.get("secret", "").count(".") == 1:
            return token["secret"]
    body = {
        "tokenName": TOKEN_NAME,
        "type": "frontend",
        "environment": "development",
        "projects": ["*"],
    }
    return json.loads(checked(base_url, "POST", "/api/admin/api-tokens", admin, body))["secret"]


# --- comparing the answers ----------------------------------------------------------------------


def context(number: int) -> dict:
    found = {
        "userId": f"user-{number * 7 % 1000}",
        "sessionId": f"session-{number}",
        "remoteAddress": "10.1.2.3" if number % 3 == 0 else "192.168.5.5",
        "properties": {"country": COUNTRIES[number % len(COUNTRIES)]},
    }
    if number % 5 == 0:
        found["appName"] = "shop"
    return found


def ask(base_url: str, token: str, sent: dict, post: bool) -> tuple[int, dict | bytes]:
    if post:
        status, _, body = call(base_url, "POST", FRONTEND, token, {"context": sent})
    else:
        query = {key: value for key, value in sent.items() if key != "properties"}
        query.update({f"properties[{k}]": v for k, v in sent["properties"].items()})
        path = f"{FRONTEND}?{urllib.parse.urlencode(query)}"
        status, _, body = call(base_url, "GET", path, token)
    if status != 200:
        return status, body
    toggles = [t for t in json.loads(body)["toggles"] if t["name"].startswith(PREFIX)]
    return status, {"toggles": sorted(toggles, key=lambda toggle: toggle["name"])}


def compare(servers: dict[str, tuple[str, str]], requests: int) -> int:
    """The same requests to both servers; prints and returns how many answers differ."""
    differing = 0
    for number in range(requests):
        sent = context(number)
        answers = {
            name: ask(base_url, token, sent, post=number % 2 == 1)
            for name, (base_url, token) in servers.items()
        }
        if answers["flagadmin"] != answers["unleash"]:
            differing += 1
            if differing <= 3:
                print(f"  differs for {sent}: {answers}")
    print(f"compared {requests} requests (GET and POST): {differing} differing answers")
    return differing


def wait_for_unleash(base_url: str, token: str, flags: int, timeout_s: float = 90) -> None:
    """Unleash's Frontend API answers from a cache it refreshes every few seconds: wait until
    it serves the bench's flags as seeded (enabled ones there, archived ones gone)."""
    wanted = {flag_name(number) for number in range(0, flags, ENABLED_EVERY)}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        everyone = {"userId": "user-0", "sessionId": "s", "properties": {"country": "no"}}
        status, answer = ask(base_url, token, everyone, post=True)
        names = {toggle["name"] for toggle in answer["toggles"]} if status == 200 else set()
        if names and names <= wanted and len(names) >= len(wanted) // 2:
            time.sleep(5)  # one more refresh: the last writes too
            return
        time.sleep(1)
    raise RuntimeError("Unleash's Frontend API did not serve the bench flags in time")


# --- the load -------------------------------------------------------------------------------

# The two loads. `returning`: 1,000 visitors, each with its own session and country, as the
# browser SDK asks (it keeps its sessionId), one after the other. `new`: every request a new
# session (of 1,000 users and the countries), so that no answer is ever asked for twice.
LOAD_SCRIPT = """
local next_thread = 1
function setup(thread)
  thread:set("tid", next_thread)
  next_thread = next_thread + 1
end
local sent = 0
local countries = {"no", "se", "dk", "fi"}
function request()
  sent = sent + 1
  local visitor = (sent * 7 + tid * 500) % 1000
  local session = "s-" .. visitor
  local country = countries[(visitor % 4) + 1]
  if NEW_SESSIONS then
    session = "s-" .. tid .. "-" .. sent .. "-__WRK_RUN_NONCE__"
    country = countries[(sent % 4) + 1]
  end
  local path = "/api/frontend?userId=user-" .. visitor .. "&sessionId=" .. session ..
    "&properties%5Bcountry%5D=" .. country
  return wrk.format("GET", path)
end
"""
LOADS = {"returning": "NEW_SESSIONS = false\n", "new": "NEW_SESSIONS = true\n"}
# Seconds of each load before it is measured: the returning visitors have each asked a few
# times by then (flagadmin keeps a worker's answers for the sessions it has seen).
WARMUP_S = 6


def fresh_rate_limit_window(base_url: str, token: str) -> None:
    """Start Unleash's load in a rate-limit window with nearly all of its 20,000 left."""
    _, headers, _ = call(base_url, "GET", FRONTEND, token)
    headers = {name.lower(): value for name, value in headers.items()}
    if int(headers.get("ratelimit-remaining", LIMIT_LEFT)) < LIMIT_LEFT:
        time.sleep(int(headers.get("ratelimit-reset", 60)) + 1)


def worker_memory(root: int) -> list[tuple[float, float]]:
    """(RSS, PSS) in MiB of each app server worker under the stack whose root is `root`."""
    return [
        (rss / 1024, pss / 1024)
        for rss, pss in (memory_kib([pid]) for pid in harness.app_server_workers(root))
    ]


def line(result: harness.WrkResult) -> str:
    text = (
        f"{result.answered_2xx_per_s:7.1f} requests/s, p50 {result.p50_ms:6.1f} ms, "
        f"p99 {result.p99_ms:6.1f} ms"
    )
    if not result.ok:
        text += f"; {result.errors} socket errors, {result.non_2xx} statuses >= 400"
    return text


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
    parser.add_argument("--compare", type=int, default=400, help="requests compared")
    parser.add_argument("--compare-only", action="store_true", help="compare, no load")
    parser.add_argument("--only", choices=list(LOADS), action="append")
    parser.add_argument("--keep", action="store_true", help="leave the flags active in Unleash")
    args = parser.parse_args()

    unleash = args.unleash_url
    if call(unleash, "GET", "/api/admin/projects", UNLEASH_TOKEN)[0] != 200:
        print(f"Unleash does not answer at {unleash} (start.sh?)", file=sys.stderr)
        return 2
    harness.create_database(args.database_url)
    harness.setup_django(args.database_url)
    admin = harness.admin_token()
    loads = args.only or list(LOADS)
    figures: dict[str, dict[str, list]] = {load: {"flagadmin": [], "unleash": []} for load in loads}
    # load -> server -> CPU milliseconds per answered request, one a round
    cpu: dict[str, dict[str, list[float]]] = {
        load: {"flagadmin": [], "unleash": []} for load in loads
    }
    workers_memory: list[tuple[float, float]] = []
    failed = False
    with harness.serve(
        args.database_url,
        workers=args.workers,
        threads=args.threads,
        worker_class="gthread" if args.threads > 1 else "sync",
        stack="proxy",
    ) as flagadmin:
        admins = {"flagadmin": (flagadmin, admin), "unleash": (unleash, UNLEASH_TOKEN)}
        started = time.monotonic()
        servers = {}
        for name, (base_url, secret) in admins.items():
            seed(base_url, secret, args.flags)
            servers[name] = (base_url, frontend_token(base_url, secret))
        harness.analyze(args.database_url)
        print(f"seeded {args.flags} flags in each server in {time.monotonic() - started:.0f} s")
        try:
            wait_for_unleash(unleash, servers["unleash"][1], args.flags)
            if compare(servers, args.compare):
                failed = True
            for name, (base_url, token) in servers.items():
                _, _, body = call(base_url, "GET", f"{FRONTEND}?userId=user-1", token)
                toggles = json.loads(body)["toggles"]
                bench = sum(toggle["name"].startswith(PREFIX) for toggle in toggles)
                print(f"{name}: {len(toggles)} toggles ({bench} of the bench), {len(body)} bytes")
            if args.compare_only:
                return 1 if failed else 0
            unleash_pid = int(UNLEASH_PID_FILE.read_text().strip())
            roots = {"flagadmin": harness.server_pid(flagadmin), "unleash": unleash_pid}
            for round_number in range(1, args.rounds + 1):
                for load in loads:
                    for name, (base_url, token) in servers.items():
                        if name == "unleash":
                            fresh_rate_limit_window(base_url, token)
                        settle()
                        sampler = MemorySampler(roots[name])
                        sampler.start()
                        cpu_before = harness.tree_cpu_seconds(roots[name])
                        result = harness.run_wrk(
                            base_url + FRONTEND,
                            headers={"Authorization": token},
                            connections=args.connections,
                            duration_s=args.duration,
                            warmup_s=WARMUP_S,
                            lua=LOADS[load] + LOAD_SCRIPT,
                        )
                        peak_rss, peak_pss = sampler.stop()
                        answered = result.requests - result.non_2xx
                        cpu_ms = (harness.tree_cpu_seconds(roots[name]) - cpu_before) * 1000
                        # The warm-up's requests too: per request of the whole run.
                        cpu_ms /= max(1, answered * (args.duration + WARMUP_S) / args.duration)
                        cpu[load][name].append(cpu_ms)
                        if name == "flagadmin":
                            workers_memory.extend(worker_memory(roots[name]))
                        figures[load][name].append((result, peak_rss, peak_pss))
                        failed |= not result.ok
                        print(
                            f"round {round_number} {load:9} {name:9}: {line(result)}; "
                            f"{cpu_ms:.2f} ms CPU a request; "
                            f"peak RSS {peak_rss:.0f} MiB, PSS {peak_pss:.0f} MiB"
                        )
        finally:
            if not args.keep:
                archive(unleash, UNLEASH_TOKEN, bench_flag_names(unleash, UNLEASH_TOKEN))

    print(
        f"{args.rounds} rounds together, {args.connections} connections, {args.flags} flags "
        f"({args.flags // ENABLED_EVERY} on); flagadmin: nginx + {args.workers} granian "
        f"workers x {args.threads} threads"
    )
    for load in loads:
        together = {name: combined(entries) for name, entries in figures[load].items()}
        for name, (result, rss, pss) in together.items():
            print(
                f"  {load:9} {name:9}: {line(result)}; "
                f"{statistics.median(cpu[load][name]):.2f} ms CPU a request (median); "
                f"peak RSS {rss:.0f} MiB, PSS {pss:.0f} MiB (all processes)"
            )
        ours, theirs = together["flagadmin"][0], together["unleash"][0]
        per_cpu = statistics.median(cpu[load]["unleash"]) / statistics.median(
            cpu[load]["flagadmin"]
        )
        print(
            f"  {load:9} flagadmin / Unleash: "
            f"{ours.answered_2xx_per_s / theirs.answered_2xx_per_s:.2f} x the rate, "
            f"p99 {ours.p99_ms:.1f} ms against {theirs.p99_ms:.1f} ms; "
            f"{per_cpu:.2f} x the requests per CPU second"
        )
    if workers_memory:
        print(
            "  flagadmin per worker: RSS "
            f"{statistics.median(rss for rss, _ in workers_memory):.0f} MiB, PSS "
            f"{statistics.median(pss for _, pss in workers_memory):.0f} MiB (median after loads)"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
