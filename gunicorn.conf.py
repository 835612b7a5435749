"""gunicorn's settings for every way this project starts it (`gunicorn flagadmin.wsgi` run from
this folder, scripts/serve, flagadmin.serving, the benchmarks, CI): gunicorn reads this file
from the working directory.

No control socket: gunicorn 26 opens one at ~/.gunicorn/gunicorn.ctl by default, a path every
instance of the same user shares, so a second instance on the machine (a benchmark beside a
server, two stacks) takes it over and removes it when it stops.
"""

control_socket_disable = True
