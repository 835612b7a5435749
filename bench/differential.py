"""Differential test: the same admin calls to the real Unleash 8.2 and to flagadmin, then both
official SDKs (Python `UnleashClient`, Node `unleash-client`) decide every flag for the same
contexts against each server, and every decision that differs between the servers is counted.

    .venv/bin/python bench/differential.py [--contexts 500] [--findings FILE] [--record FILE]
        [--flagadmin-root DIR] [--keep]

It serves flagadmin itself (the production stack, nginx in front of granian, as SDKs reach it
in production; gunicorn alone where nginx is not installed; a fresh SQLite database in a
temporary folder, a free port) and uses the Unleash reference at UNLEASH_URL (default
http://127.0.0.1:4242, admin token UNLEASH_ADMIN_TOKEN or the reference's own), starting it
with ../shared/unleash-reference/start.sh when nothing answers there. Flags are named with a prefix
of this run (Unleash's database persists) and archived and deleted on Unleash at the end,
with the run's client tokens.

For each set-up (bench/differential_setups.py) it records:
- the status of every admin call on both servers (a difference is a finding);
- the flag as each server serves it on /api/client/features, normalised (strategy ids left
  out), per environment: where they differ, the first difference is printed;
- per SDK, how many of its decisions differ: `isEnabled` and `getVariant` (name, enabled,
  payload) for every context, in `development` (and `production` for the set-ups that write
  there). Contexts whose answer is a random draw (no userId or sessionId under `default`
  stickiness, ...) are not compared. Each SDK runs once per server, all flags in one process.
Set-ups that need an endpoint flagadmin lacks are listed as not covered (each run probes it).

Prints one line per set-up and `differential: N decisions, M mismatches`; exits 1 when M > 0
or a status differs (a payload difference alone is printed, it does not fail the run), 2 when
it could not run (no reference, a server that does not start or stops answering).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root

from bench import harness
from bench.differential_contexts import contexts
from bench.differential_report import (
    ENVIRONMENTS,
    SDKS,
    CallRecord,
    Outcome,
    Report,
    compare,
)
from bench.differential_setups import Call, Setup, all_setups

REPO_ROOT = harness.REPO_ROOT
BENCH = Path(__file__).resolve().parent
REFERENCE_START = REPO_ROOT.parent / "shared" / "unleash-reference" / "start.sh"
NODE_MODULES = REPO_ROOT / "tests" / "sdk" / "node" / "node_modules"
UNLEASH_ADMIN_TOKEN = "*:*.unleash-insecure-admin-api-token"


class CannotRun(Exception):
    """The comparison cannot run (exit status 2)."""


# --- HTTP ----------------------------------------------------------------------------------


def http(base: str, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
    """(status, parsed JSON body or text) of one call; a refused connection is status 0."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{base}{path}", data=data, method=method)
    request.add_header("Authorization", token)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        return 0, str(error)
    try:
        return status, json.loads(raw) if raw else None
    except ValueError:
        return status, raw.decode(errors="replace")


def healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/health", timeout=3) as response:
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


# --- the two servers -------------------------------------------------------------------------


def reference(url: str) -> str:
    """The Unleash reference's base URL, started with its start.sh when it does not answer."""
    if healthy(url):
        return url
    if not REFERENCE_START.exists():
        raise CannotRun(f"nothing answers at {url} and there is no {REFERENCE_START} to start it")
    print(f"starting the Unleash reference: {REFERENCE_START}", flush=True)
    where = urllib.parse.urlsplit(url)
    env = dict(os.environ, HTTP_HOST=where.hostname or "127.0.0.1", HTTP_PORT=str(where.port or 80))
    done = subprocess.run(
        [str(REFERENCE_START)], capture_output=True, text=True, check=False, env=env
    )
    if done.returncode != 0 or not healthy(url):
        raise CannotRun(f"{REFERENCE_START} failed:\n{done.stdout}{done.stderr}")
    return url


@contextlib.contextmanager
def flagadmin(root: Path) -> Iterator[tuple[str, str]]:
    """flagadmin (the code in `root`) served by the production stack (gunicorn alone without
    nginx, or for a `root` from before the stack ran granian) on a fresh SQLite database in a
    temporary folder: (base URL, admin token)."""
    with tempfile.TemporaryDirectory(prefix="differential-") as work:
        url = f"sqlite:///{work}/flagadmin.sqlite3"
        env = harness.server_env(url, ENV_FILE="")
        env["PYTHONPATH"] = str(root)  # ahead of the editable install of this repository
        manage = [str(harness.PYTHON), "manage.py"]
        for command in (["migrate", "--noinput", "-v", "0"], ["createapitoken", "--quiet-token"]):
            done = subprocess.run(
                manage + command, cwd=root, env=env, capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise CannotRun(f"manage.py {command[0]} failed:\n{done.stderr}")
        token = done.stdout.strip()
        port = harness.free_port()
        log = Path(work) / "server.log"
        nginx = shutil.which("nginx", path=f"{os.environ.get('PATH', '')}:/usr/sbin")
        if nginx and (root / "flagadmin" / "serving" / "app_server.py").exists():
            command = [str(harness.PYTHON), "-m", "flagadmin.serving", "--threads", "4"]
            command += ["--bind", f"127.0.0.1:{port}", "--workers", "2"]
        else:
            command = [str(harness.GUNICORN), "flagadmin.wsgi", "--bind", f"127.0.0.1:{port}"]
            command += ["--workers", "2", "--log-level", "warning"]
        with log.open("w") as output:
            server = subprocess.Popen(
                command,
                cwd=root,
                env=env,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(120):
                if healthy(base) or server.poll() is not None:
                    break
                time.sleep(0.25)
            if not healthy(base):
                raise CannotRun(f"flagadmin did not start:\n{log.read_text()[-3000:]}")
            yield base, token
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


@dataclass
class Server:
    name: str
    base: str
    admin_token: str
    client_tokens: dict[str, str] = field(default_factory=dict)

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return http(self.base, method, path, self.admin_token, body)


# --- admin calls ---------------------------------------------------------------------------

PLACEHOLDER = re.compile(r"\{(flag|prefix|s\d+)(:int)?\}")


def substitute(value: Any, names: dict[str, Any]) -> Any:
    """`value` with `{flag}`, `{prefix}` and kept ids filled in (`{s1:int}` alone: a number).
    A KeyError names a kept id this server never got."""
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole and whole.group(2):
            return int(names[whole.group(1)])
        return PLACEHOLDER.sub(lambda match: str(names[match.group(1)]), value)
    if isinstance(value, list):
        return [substitute(item, names) for item in value]
    if isinstance(value, dict):
        return {key: substitute(item, names) for key, item in value.items()}
    return value


def run_calls(setup: Setup, flag: str, prefix: str, servers: list[Server]) -> list[CallRecord]:
    kept: dict[str, dict[str, Any]] = {s.name: {"flag": flag, "prefix": prefix} for s in servers}
    records = []
    for call in setup.calls:
        statuses: dict[str, int | None] = {}
        answers: dict[str, Any] = {}
        for server in servers:
            names = kept[server.name]
            try:
                path, body = substitute(call.path, names), substitute(call.body, names)
            except KeyError:
                statuses[server.name], answers[server.name] = None, "not sent"
                continue
            status, answer = server.call(call.method, path, body)
            if status == 0:
                raise CannotRun(f"{server.name} stopped answering ({call.method} {path}): {answer}")
            statuses[server.name], answers[server.name] = status, answer
            if call.keep and status < 300 and isinstance(answer, dict) and "id" in answer:
                names[call.keep] = answer["id"]
        records.append(CallRecord(call.method, call.path, statuses, answers))
    return records


# --- probes: endpoints flagadmin may lack ----------------------------------------------------


def probe_calls(flag: str) -> dict[str, list[Call]]:
    """name -> calls whose last one must succeed on flagadmin for set-ups that require it."""
    feature = f"/api/admin/projects/default/features/{flag}"
    created = Call("POST", "/api/admin/projects/default/features", {"name": flag})
    parent = Call("POST", "/api/admin/projects/default/features", {"name": f"{flag}-parent"})
    return {
        "environment-variants": [
            created,
            Call("PUT", f"{feature}/environments/development/variants", []),
        ],
        "dependencies": [
            created,
            parent,
            Call("POST", f"{feature}/dependencies", {"feature": f"{flag}-parent"}),
        ],
        "segments": [Call("GET", "/api/admin/segments")],
        "bulk-toggle": [
            created,
            Call(
                "POST",
                "/api/admin/projects/default/bulk_features/environments/development/off",
                {"features": [flag]},
            ),
        ],
        "set-sort-order": [
            created,
            Call("POST", f"{feature}/environments/development/strategies/set-sort-order", []),
        ],
    }


def probe(server: Server, prefix: str) -> dict[str, int]:
    """The status flagadmin answers each probe's last call with."""
    found = {}
    for name, calls in probe_calls(f"{prefix}-probe").items():
        status = 0
        for call in calls:
            status, _ = server.call(call.method, call.path, call.body)
        found[name] = status
    return found


# --- the client payload ----------------------------------------------------------------------


def normalised(flag: dict) -> dict:
    """A flag of /api/client/features without what legitimately differs (ids)."""
    flag = {key: value for key, value in flag.items() if value is not None}
    strategies = []
    for strategy in flag.get("strategies", []):
        strategy = {key: value for key, value in strategy.items() if key != "id"}
        # Unleash leaves out the flags a script did not send (SDKs read them as false), and
        # serves `values: []` beside a single `value` (which SDKs then read alone).
        strategy["constraints"] = [
            {"caseInsensitive": False, "inverted": False, **constraint}
            for constraint in strategy.get("constraints", [])
        ]
        for constraint in strategy["constraints"]:
            if "value" in constraint and not constraint.get("values"):
                constraint["values"] = []
        strategies.append(strategy)
    flag["strategies"] = strategies
    return flag


def client_flags(server: Server, environment: str, prefix: str) -> dict[str, dict]:
    status, body = http(
        server.base, "GET", "/api/client/features", server.client_tokens[environment]
    )
    if status != 200:
        raise CannotRun(f"{server.name}: GET /api/client/features answered {status}: {body}")
    return {
        flag["name"]: normalised(flag)
        for flag in body.get("features", [])
        if flag["name"].startswith(f"{prefix}-")
    }


def settled_payloads(servers: list[Server], prefix: str) -> dict[str, dict[str, dict]]:
    """{server: {environment: {flag: normalised}}} once two reads 1 s apart agree (both servers
    may cache the payload for about a second after a write)."""
    time.sleep(1.2)
    previous = None
    for _ in range(20):
        current = {
            s.name: {env: client_flags(s, env, prefix) for env in ENVIRONMENTS} for s in servers
        }
        if current == previous:
            return current
        previous = current
        time.sleep(1.0)
    return current


def first_difference(left: Any, right: Any, where: str = "") -> str | None:
    """Where two normalised flags first differ, as `path: unleash != flagadmin`."""
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted(set(left) | set(right)):
            if key not in right:
                return f"{where}.{key}: {json.dumps(left[key])} != (absent)"
            if key not in left:
                return f"{where}.{key}: (absent) != {json.dumps(right[key])}"
            found = first_difference(left[key], right[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(left, list) and isinstance(right, list) and len(left) == len(right):
        for index, (a, b) in enumerate(zip(left, right, strict=True)):
            found = first_difference(a, b, f"{where}[{index}]")
            if found:
                return found
        return None
    if left != right:
        return f"{where or '.'}: {json.dumps(left)} != {json.dumps(right)}"
    return None


# --- the SDKs --------------------------------------------------------------------------------


def sdk_command(sdk: str, job: Path) -> list[str]:
    if sdk == "python":
        return [str(harness.PYTHON), str(BENCH / "differential_sdk.py"), str(job)]
    return ["node", str(BENCH / "differential_sdk.js"), str(job)]


def evaluate_all(
    servers: list[Server], flags: dict[str, list[str]], context_list: list[dict], work: Path
) -> dict[tuple[str, str], dict]:
    """{(sdk, server): {environment: {flag: [answer per context]}}}, the four SDK processes
    running side by side."""
    processes = {}
    for server in servers:
        job = work / f"job-{server.name}.json"
        job.write_text(
            json.dumps(
                {
                    "url": f"{server.base}/api",
                    "tokens": server.client_tokens,
                    "flags": flags,
                    "contexts": context_list,
                }
            )
        )
        for sdk in SDKS:
            env = dict(os.environ, NODE_PATH=str(NODE_MODULES))
            processes[(sdk, server.name)] = subprocess.Popen(
                sdk_command(sdk, job),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
    results = {}
    with concurrent.futures.ThreadPoolExecutor(len(processes)) as pool:
        outputs = {
            key: pool.submit(process.communicate, None, 300) for key, process in processes.items()
        }
        for key, future in outputs.items():
            try:
                stdout, stderr = future.result()
            except subprocess.TimeoutExpired:
                processes[key].kill()
                raise CannotRun(f"the {key[0]} SDK against {key[1]} took over 300 s") from None
            if processes[key].returncode != 0:
                raise CannotRun(f"the {key[0]} SDK against {key[1]} failed:\n{stderr[-3000:]}")
            results[key] = json.loads(stdout)
    return results


# --- the run ---------------------------------------------------------------------------------


def run(arguments: argparse.Namespace) -> int:
    started = time.monotonic()
    unleash_base = reference(arguments.unleash_url)
    prefix = f"diff{datetime.now(UTC):%m%d%H%M%S}{secrets.token_hex(2)}"
    unleash = Server("unleash", unleash_base, arguments.unleash_token)
    with (
        flagadmin(Path(arguments.flagadmin_root)) as (base, token),
        tempfile.TemporaryDirectory() as work,
    ):
        servers = [unleash, Server("flagadmin", base, token)]
        token_calls: list[CallRecord] = []
        outcomes: list[Outcome] = []
        uncovered: list[Setup] = []
        try:
            for environment in ENVIRONMENTS:
                body = {
                    "tokenName": f"{prefix}-{environment}",
                    "type": "client",
                    "environment": environment,
                    "projects": ["default"],
                }
                statuses = {}
                for server in servers:
                    status, answer = server.call("POST", "/api/admin/api-tokens", body)
                    statuses[server.name] = status
                    if status >= 300:
                        raise CannotRun(f"{server.name}: a client token: {status} {answer}")
                    server.client_tokens[environment] = answer["secret"]
                token_calls.append(CallRecord("POST", "/api/admin/api-tokens", statuses, {}))
            probes = probe(servers[1], prefix)
            available = {name for name, status in probes.items() if status < 300}
            for setup in all_setups():
                if setup.requires and setup.requires not in available:
                    uncovered.append(setup)
                    continue
                flag = f"{prefix}-{setup.slug}"
                outcomes.append(Outcome(setup, flag, run_calls(setup, flag, prefix, servers)))
            written = time.monotonic()
            payloads = settled_payloads(servers, prefix)
            settled = time.monotonic()
            for outcome in outcomes:
                for environment in ENVIRONMENTS:
                    outcome.payload[environment] = first_difference(
                        payloads["unleash"][environment].get(outcome.flag),
                        payloads["flagadmin"][environment].get(outcome.flag),
                    )
            context_list = contexts(arguments.contexts)
            flags = {
                environment: [o.flag for o in outcomes if environment in o.setup.environments]
                for environment in ENVIRONMENTS
            }
            answers = evaluate_all(servers, flags, context_list, Path(work))
            evaluated = time.monotonic()
            for outcome in outcomes:
                compare(outcome, answers, context_list)
        finally:
            if not arguments.keep:
                try:
                    failed = clean_up(unleash, prefix, [o.flag for o in outcomes])
                except Exception as error:  # never hide the run's own error
                    failed = [repr(error)]
                for failure in failed:
                    print(f"clean-up of {prefix}-* on Unleash: {failure}", file=sys.stderr)
    report = Report(outcomes, uncovered, probes, token_calls, payloads)
    report.print(
        timings=(
            written - started,
            settled - written,
            evaluated - settled,
            time.monotonic() - started,
        ),
        contexts=len(context_list),
    )
    if arguments.findings:
        Path(arguments.findings).write_text(report.markdown(prefix, len(context_list)))
    if arguments.record:
        Path(arguments.record).write_text(json.dumps(report.record(), indent=1))
    return 1 if report.failed else 0


def run_flags(body: Any, prefix: str) -> list[str]:
    """The names of this run's flags in a list answer (anything else: none)."""
    features = body.get("features", []) if isinstance(body, dict) else []
    return [flag["name"] for flag in features if flag["name"].startswith(f"{prefix}-")]


def clean_up(unleash: Server, prefix: str, created: list[str]) -> list[str]:
    """Archive and delete the run's flags on Unleash (`created`, and any other of the run's
    prefix still active), and revoke its client tokens. (Not through the search endpoint,
    which Unleash allows 15 times a minute.) Returns the calls that failed, after one retry."""
    failed = []

    def call(method: str, path: str, body: Any = None) -> Any:
        for _ in range(2):
            status, answer = unleash.call(method, path, body)
            if status < 300:
                return answer
            time.sleep(1)
        failed.append(f"{method} {path}: {status} {str(answer)[:200]}")
        return None

    listed = call("GET", "/api/admin/projects/default/features")
    if active := run_flags(listed, prefix):
        call("POST", "/api/admin/projects/default/archive", {"features": active})
    names = sorted(set(created) | set(active))
    for start in range(0, len(names), 100):  # names never created are passed over
        call("POST", "/api/admin/projects/default/delete", {"features": names[start : start + 100]})
    segments = call("GET", "/api/admin/segments")
    for segment in segments.get("segments", []) if isinstance(segments, dict) else []:
        if str(segment.get("name", "")).startswith(f"{prefix}-"):
            call("DELETE", f"/api/admin/segments/{segment['id']}")
    for token in unleash.client_tokens.values():
        call("DELETE", f"/api/admin/api-tokens/{urllib.parse.quote(token, safe='')}")
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--contexts", type=int, default=500, help="How many contexts (500).")
    parser.add_argument(
        "--unleash-url", default=os.environ.get("UNLEASH_URL", "http://127.0.0.1:4242")
    )
    parser.add_argument(
        "--unleash-token", default=os.environ.get("UNLEASH_ADMIN_TOKEN", UNLEASH_ADMIN_TOKEN)
    )
    parser.add_argument(
        "--flagadmin-root",
        default=str(REPO_ROOT),
        help="Serve flagadmin from this copy of the repository (default: this one), e.g. "
        "a `git archive` of another commit; it runs with this repository's .venv.",
    )
    parser.add_argument("--findings", help="Also write the findings as Markdown to this file.")
    parser.add_argument(
        "--record",
        help="Also write every admin call with both servers' statuses, and each set-up's "
        "counts, as JSON to this file.",
    )
    parser.add_argument(
        "--keep", action="store_true", help="Leave the run's flags on Unleash (to look at them)."
    )
    arguments = parser.parse_args()
    try:
        return run(arguments)
    except CannotRun as error:
        print(f"differential: cannot run: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
