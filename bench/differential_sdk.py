"""The Python SDK's side of bench/differential.py: one process that evaluates every flag of a
job for every context, with the official `UnleashClient` fetching from one server.

Usage: python bench/differential_sdk.py JOB.json  (prints the answers as JSON)
JOB: {"url": ".../api", "tokens": {environment: token}, "flags": {environment: [flag, ...]},
"contexts": [...]}
Answers: {environment: {flag: [[enabled, variant, variant enabled, payload], ...]}}, one entry
per context, in order. bench/differential_sdk.js does the same with the Node SDK.
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile

from UnleashClient import UnleashClient
from UnleashClient.utils import InstanceAllowType


def answers(client: UnleashClient, flags: list[str], contexts: list[dict]) -> dict[str, list]:
    found = {}
    for flag in flags:
        rows = []
        for context in contexts:
            enabled = client.is_enabled(flag, dict(context))
            chosen = client.get_variant(flag, dict(context))
            payload = chosen.get("payload")
            rows.append([enabled, chosen.get("name"), chosen.get("enabled"), payload])
        found[flag] = rows
    return found


def main(job_path: str) -> None:
    logging.basicConfig(level=logging.ERROR)
    with open(job_path) as handle:
        job = json.load(handle)
    result = {}
    with tempfile.TemporaryDirectory(prefix="differential-python-sdk-") as cache:
        for environment, token in job["tokens"].items():
            client = UnleashClient(
                url=job["url"],
                app_name="differential-python",
                custom_headers={"Authorization": token},
                refresh_interval=3600,
                disable_metrics=True,
                disable_registration=True,
                cache_directory=f"{cache}/{environment}",
                multiple_instance_mode=InstanceAllowType.SILENTLY_ALLOW,
            )
            client.initialize_client()  # fetches the flags before it returns
            try:
                result[environment] = answers(client, job["flags"][environment], job["contexts"])
            finally:
                client.destroy()
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
