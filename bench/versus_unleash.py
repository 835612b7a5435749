"""Flag creation side by side with the real Unleash: same PostgreSQL server, same flags present,
same load, alternating rounds; throughput, latency, CPU and the servers' memory.

    ../shared/unleash-reference/start.sh     # Unleash 8.2 on 127.0.0.1:4242
    .venv/bin/python bench/versus_unleash.py --rounds 3

Before the rounds, each server gets the same `--existing` flags through its own API (POST
/api/admin/projects/default/features). Each round then drives `POST .../features` with wrk
(`--connections`, new names) for `--duration` seconds against flagadmin, then against Unleash,
and then reads the project's flags (`GET .../features`, the `--existing` flags) the same way;
the flags a round created are archived and deleted afterwards through each server's API, so
open-source Unleash stays under its 5,000-flag limit and both keep the same data; then each
server's database is vacuumed (`--unleash-database-url` for Unleash's), as autovacuum would.
flagadmin is served by the production stack (nginx + granian, `--workers` x `--threads`).
Each round starts once the machine is quiet (under 10 % busy), so that neither server works
off the other's load in it. Memory is sampled every 0.2 s during each load: the resident set
(RSS) of every process of each server (flagadmin: nginx and granian, main process and workers;
Unleash: its node process) and the proportional set (PSS), which counts pages shared between
forked workers once.

Rates count the requests answered 2xx: a creation refused (Unleash answers 4xx once a project
holds 5,000 flags, which `--existing` plus a round's creations can reach: 2,000 + 10 s at 340/s
did) is not a creation, and comes back faster than one. A round with refusals says so.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import harness

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/flagadmin_bench_versus"
UNLEASH_TOKEN = "*:*.unleash-insecure-admin-api-token"
UNLEASH_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/unleash"
UNLEASH_PID_FILE = (
    Path(__file__).resolve().parents[2] / "shared" / "unleash-reference" / "run" / "unleash.pid"
)
PATH = "/api/admin/projects/default/features"


def call(base_url: str, method: str, path: str, token: str, body: object = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        base_url + path,
        data=data,
        method=method,
        headers={"Authorization": token, "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def flag_names(base_url: str, token: str) -> list[str]:
    request = urllib.request.Request(
        base_url + PATH, headers={"Authorization": token, "Accept": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return [flag["name"] for flag in json.loads(response.read())["features"]]


def remove_flags(base_url: str, token: str, names: list[str]) -> None:
    """Archive `names` through the API (batches of 500), then delete them: through Unleash's
    API, or for flagadmin (which has no bulk delete endpoint) through the ORM in this process,
    which is set up on its database."""
    batches = [names[start : start + 500] for start in range(0, len(names), 500)]
    for batch in batches:
        body = {"features": batch}
        status = call(base_url, "POST", "/api/admin/projects/default/archive", token, body)
        if status >= 300:
            raise RuntimeError(f"{base_url}: archive answered {status}")
    if token != UNLEASH_TOKEN:
        from features.models import Feature

        Feature.objects.filter(name__in=names).delete()
        return
    if batches:
        # Unleash records an archived flag's lifecycle stage asynchronously after answering;
        # deleting the flag before that insert lands makes it fail a foreign key, and Unleash
        # 8.2 exits on that unhandled error. Give it time.
        time.sleep(3)
    for batch in batches:
        body = {"features": batch}
        status = call(base_url, "POST", "/api/admin/projects/default/delete", token, body)
        if status >= 300:
            raise RuntimeError(f"{base_url}: delete answered {status}")


def seed(base_url: str, token: str, existing: int) -> None:
    """Exactly `existing` flags named `seed-N` in project default, nothing else."""
    names = flag_names(base_url, token)
    remove_flags(base_url, token, [name for name in names if not name.startswith("seed-")])
    present = {name for name in names if name.startswith("seed-")}
    extra = sorted(present - {f"seed-{n}" for n in range(existing)})
    remove_flags(base_url, token, extra)
    for number in range(existing):
        if f"seed-{number}" not in present:
            body = {"name": f"seed-{number}", "description": "benchmark", "type": "release"}
            status = call(base_url, "POST", PATH, token, body)
            if status != 201:
                raise RuntimeError(f"{base_url}: creating seed-{number} answered {status}")


def vacuum(database_url: str) -> None:
    """VACUUM (ANALYZE) a server's database after the flags of a round were deleted, as
    autovacuum would: a PostgreSQL without it (this machine's conf.d/90-ci.conf turns it off)
    leaves their dead rows to slow that server's next round (flagadmin's creations went from
    620-640/s to 450-480/s over 15,000 dead flag rows, and back after a VACUUM)."""
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("VACUUM (ANALYZE)")


def memory_kib(pids: list[int]) -> tuple[int, int]:
    """(RSS, PSS) in KiB summed over `pids` (processes that ended meanwhile count 0)."""
    rss = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            continue
    return rss, pss


class MemorySampler(threading.Thread):
    """Peak and mean RSS/PSS of a process tree while it runs."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.samples: list[tuple[int, int]] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            self.samples.append(memory_kib(harness.process_tree(self.root)))
            self.stopping.wait(0.2)

    def stop(self) -> tuple[float, float]:
        """(peak RSS, peak PSS) in MiB."""
        self.stopping.set()
        self.join()
        return (
            max(rss for rss, _ in self.samples) / 1024,
            max(pss for _, pss in self.samples) / 1024,
        )


def busy_share(seconds: float = 1.0) -> float:
    """The share of the machine's CPU time that was busy over the next `seconds`."""

    def sample() -> tuple[int, int]:
        fields = [int(value) for value in Path("/proc/stat").read_text().split()[1:9]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields) - idle, sum(fields)

    busy_before, total_before = sample()
    time.sleep(seconds)
    busy_after, total_after = sample()
    return (busy_after - busy_before) / max(1, total_after - total_before)


def settle(limit_s: float = 30.0) -> None:
    """Wait until the machine is quiet (under 10 % busy over a second), at most `limit_s`:
    a server still working off the previous round (Unleash handles its events after
    answering) would otherwise take CPU from the next one."""
    deadline = time.monotonic() + limit_s
    while busy_share() > 0.10 and time.monotonic() < deadline:
        pass


def load(base_url: str, token: str, seconds: int, connections: int) -> harness.WrkResult:
    return harness.run_wrk(
        base_url + PATH,
        headers={"Authorization": token, "Content-Type": "application/json"},
        connections=connections,
        duration_s=seconds,
        warmup_s=0,
        lua=harness.post_lua(PATH, '{"name": "versus-{n}", "description": "benchmark"}'),
    )


def read_load(base_url: str, token: str, seconds: int, connections: int) -> harness.WrkResult:
    """GET the project's flags (`--existing` of them) as fast as `connections` allow."""
    return harness.run_wrk(
        base_url + PATH,
        headers={"Authorization": token, "Accept": "application/json"},
        connections=connections,
        duration_s=seconds,
        warmup_s=0,
    )


# What each round runs on each server, in order: name -> (load, unit of its rate).
WORKLOADS = {
    "creations": (load, "creations/s"),
    f"reads of the project's flags (GET {PATH})": (read_load, "reads/s"),
}

# A load's figures: wrk's result, and the server's peak RSS and PSS meanwhile (MiB).
Measured = tuple[harness.WrkResult, float, float]


def described(result: harness.WrkResult, peak_rss: float, peak_pss: float, unit: str) -> str:
    return (
        f"{result.answered_2xx_per_s:6.1f} {unit}, p50 {result.p50_ms:6.1f} ms, "
        f"p99 {result.p99_ms:6.1f} ms, {result.errors + result.non_2xx} errors; "
        f"peak RSS {peak_rss:5.0f} MiB, PSS {peak_pss:5.0f} MiB"
    )


def combined(entries: list[Measured]) -> Measured:
    """The rounds together: rates over their summed requests and duration (with rounds of equal
    length, the mean of the rounds' rates), each latency and memory figure's median, errors
    summed."""
    results = [result for result, _, _ in entries]
    requests = sum(r.requests for r in results)
    duration = sum(r.duration_s for r in results)
    result = harness.WrkResult(
        requests=requests,
        duration_s=duration,
        requests_per_s=requests / duration if duration else 0.0,
        **{
            field: statistics.median(getattr(r, field) for r in results)
            for field in ("p50_ms", "p90_ms", "p99_ms", "max_ms")
        },
        errors=sum(r.errors for r in results),
        non_2xx=sum(r.non_2xx for r in results),
    )
    return (
        result,
        statistics.median(rss for _, rss, _ in entries),
        statistics.median(pss for _, _, pss in entries),
    )


def all_entries(figures: dict[str, dict[str, list[Measured]]]) -> list[Measured]:
    return [
        entry
        for by_server in figures.values()
        for entries in by_server.values()
        for entry in entries
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--unleash-url", default="http://127.0.0.1:4242")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument(
        "--unleash-database-url",
        default=UNLEASH_DATABASE_URL,
        help="Unleash's database, vacuumed as flagadmin's is",
    )
    parser.add_argument("--existing", type=int, default=2000, help="flags present in each")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=8, help="seconds per server and round")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--port", type=int, default=None)
    args = parser.parse_args()

    unleash_pid = int(UNLEASH_PID_FILE.read_text().strip())
    unleash = args.unleash_url
    if call(unleash, "GET", "/api/admin/projects", UNLEASH_TOKEN) != 200:
        print(f"Unleash does not answer at {unleash} (start.sh?)", file=sys.stderr)
        return 1
    harness.create_database(args.database_url)
    harness.setup_django(args.database_url)
    token = harness.admin_token()
    # workload -> server -> one (result, peak RSS, peak PSS) per round
    figures: dict[str, dict[str, list[Measured]]] = {
        workload: {"flagadmin": [], "unleash": []} for workload in WORKLOADS
    }
    with harness.serve(
        args.database_url,
        workers=args.workers,
        threads=args.threads,
        worker_class="gthread" if args.threads > 1 else "sync",
        stack="proxy",
        port=args.port,
    ) as flagadmin:
        servers = {
            "flagadmin": (flagadmin, token, harness.server_pid(flagadmin)),
            "unleash": (unleash, UNLEASH_TOKEN, unleash_pid),
        }
        databases = {"flagadmin": args.database_url, "unleash": args.unleash_database_url}
        started = time.monotonic()
        for name, (base_url, secret, _) in servers.items():
            seed(base_url, secret, args.existing)
            vacuum(databases[name])
        print(f"seeded {args.existing} flags in each server in {time.monotonic() - started:.0f} s")
        for name, (base_url, secret, _) in servers.items():
            load(base_url, secret, 2, args.connections)  # warm-up
            seed(base_url, secret, args.existing)
            vacuum(databases[name])
        for round_number in range(1, args.rounds + 1):
            for workload, (run, unit) in WORKLOADS.items():
                for name, (base_url, secret, root) in servers.items():
                    settle()
                    sampler = MemorySampler(root)
                    sampler.start()
                    result = run(base_url, secret, args.duration, args.connections)
                    peak_rss, peak_pss = sampler.stop()
                    figures[workload][name].append((result, peak_rss, peak_pss))
                    figures_text = described(result, peak_rss, peak_pss, unit)
                    print(f"round {round_number} {name:9}: {figures_text}")
                    if result.non_2xx:
                        print(
                            f"  {name} refused {result.non_2xx} requests (not counted in the "
                            "rate; Unleash's 5,000-flag limit? lower --duration or --existing)"
                        )
                    if run is load:  # the flags it created go, for the next load
                        seed(base_url, secret, args.existing)
                        vacuum(databases[name])

    print(
        f"{args.rounds} rounds together, {args.connections} connections, {args.existing} flags "
        f"present; flagadmin: nginx + {args.workers} granian workers x {args.threads} threads"
    )
    for workload, (_, unit) in WORKLOADS.items():
        print(f"  {workload}:")
        rates = {}
        for name, entries in figures[workload].items():
            together = combined(entries)
            rates[name] = together[0].answered_2xx_per_s
            print(f"  {name:9}: {described(*together, unit)}")
        print(f"  flagadmin / Unleash: {rates['flagadmin'] / rates['unleash']:.2f} x the {unit}")
    return 0 if all(entry[0].ok for entry in all_entries(figures)) else 1


if __name__ == "__main__":
    sys.exit(main())
