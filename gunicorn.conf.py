"""gunicorn's settings for every way this project starts it (`gunicorn flagadmin.wsgi` run from
this folder, scripts/serve, flagadmin.serving, the benchmarks, CI): gunicorn reads this file
from the working directory.

No control socket: gunicorn 26 opens one at ~/.gunicorn/gunicorn.ctl by default, a path every
instance of the same user shares, so a second instance on the machine (a benchmark beside a
server, two stacks) takes it over and removes it when it stops.

With `--preload` (flagadmin.serving.stack) the master imports the app before it forks the workers.
`pre_fork` then closes any database connection the start-up opened (a connection shared by two
processes would interleave their queries), and freezes the objects loaded so far out of the
garbage collector's reach: its passes would otherwise write to every page of them in each
worker, and the pages the workers share with the master would be copied one by one.

gunicorn's own refusals (a request line or headers over its limits, malformed HTTP) are answered
with the API's error body instead of an HTML page, and its log lines have query strings and token
secrets redacted (flagadmin/serving/gunicorn_hooks.py).
"""

import gc
import sys

from flagadmin.serving import gunicorn_hooks

control_socket_disable = True

gunicorn_hooks.install()


def pre_fork(server, worker) -> None:
    if "django.db" in sys.modules:
        from django.db import connections

        connections.close_all()
    gc.freeze()
