"""The production stack's app server: granian, serving `flagadmin.wsgi` on the stack's Unix
socket behind nginx (`python -m flagadmin.serving.app_server --uds PATH`, started by
flagadmin.serving).

granian parses HTTP in Rust and hands each request to the WSGI app on a pool of threads per
worker process; per request it costs a fraction of gunicorn's Python parser and gthread hand-off
(docs/serving.md has the figures). `gunicorn flagadmin.wsgi` still serves the app alone.

The app is loaded here, before granian forks its workers, which share its pages (as gunicorn's
`--preload` did): the database connections the start-up opened are closed first (a connection
shared by two processes would interleave their queries), and what was loaded is frozen out of
the garbage collector's passes, which would otherwise write to every shared page in each worker.
SIGTERM and SIGINT stop granian gracefully (`--graceful-timeout`); SIGHUP replaces its workers.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path

from flagadmin.serving.app_environ import EnvironAsNginxSentIt
from flagadmin.wsgi import application as flagadmin_application

application = EnvironAsNginxSentIt(flagadmin_application, os.environ)


def main(argv: list[str] | None = None) -> int:
    from granian.constants import HTTPModes, Interfaces
    from granian.http import HTTP1Settings
    from granian.log import LogLevels
    from granian.server import Server

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uds", type=Path, required=True, help="the Unix socket to listen on")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8, help="WSGI threads per worker")
    parser.add_argument("--graceful-timeout", type=int, default=20)
    args = parser.parse_args(argv)

    from django.db import connections

    connections.close_all()
    gc.freeze()
    server = Server(
        "flagadmin.serving.app_server:application",
        uds=args.uds,
        # Only its owner may connect: the stack's nginx (flagadmin.serving gives the socket to
        # nginx's workers' user when it runs as root). Anyone else could send X-Real-IP.
        uds_permissions=0o600,
        interface=Interfaces.WSGI,
        workers=args.workers,
        blocking_threads=args.threads,
        # Threads are started as requests need them; one idle this long ends, and with it its
        # database connection (Django's are per thread): 10 minutes, granian's most.
        blocking_threads_idle_timeout=600,
        http=HTTPModes.http1,
        websockets=False,
        backlog=2048,
        # nginx keeps its upstream connections open and bounds every request's header and body
        # already; granian's own read timeout only ends a connection nginx left idle.
        http1_settings=HTTP1Settings(keep_alive=True),
        # Errors only: its warning that 8 threads outnumber 2 cores is this design's intent
        # (threads wait on the database).
        log_level=LogLevels.error,
        log_access=False,
        respawn_failed_workers=True,
        workers_kill_timeout=args.graceful_timeout,
    )
    server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
