"""Django's PostgreSQL backend with a health check that costs no round trip, and the SQL of
the app's prepared statements shown in Django's query log.

With `CONN_HEALTH_CHECKS`, Django checks a kept connection at the start of every request that
uses the database, and its PostgreSQL backend does so with `SELECT 1`: a round trip, and work
for both sides, on every request. A connection that sits idle between two requests has nothing
to read; when the server closes it (a restart, a crash, an administrator ending the session),
it sends its last words and the end of the stream, and the socket becomes readable. So this
check asks the socket instead, without waiting. A frozen server, which neither answers nor
closes, is caught as before by the bound on every wait (flagadmin/core/db.py), not by either check.
"""

from __future__ import annotations

import select

import psycopg
from django.db.backends.postgresql import base, operations
from psycopg import pq


class DatabaseOperations(operations.DatabaseOperations):
    def last_executed_query(self, cursor, sql, params):
        # Django's own cursors bind on the client and keep the query they sent. The app's
        # server-side binding cursors (flagadmin.core.db.PreparedBinaryCursor) sent `$1`
        # placeholders, or only a prepared statement's name: the log gets the SQL with its
        # values, composed as Django composes it for server-side binding.
        if isinstance(cursor, psycopg.ClientCursor):
            return super().last_executed_query(cursor, sql, params)
        try:
            return self.compose_sql(sql, params)
        except psycopg.errors.DataError:
            return None


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    def is_usable(self) -> bool:
        raw = self.connection
        if raw is None or raw.closed or raw.pgconn.status != pq.ConnStatus.OK:
            return False
        try:
            # poll, not select: a worker with many open sockets has descriptors past 1023.
            poller = select.poll()
            poller.register(raw.pgconn.socket, select.POLLIN)
            events = poller.poll(0)
        except (OSError, ValueError, pq.PGError):
            return False
        # Anything to read on an idle connection means the server is leaving (a notification
        # would be read as well: the connection is then opened again, which is harmless).
        return not events
