"""Test settings: the real settings, with a throwaway SECRET_KEY and a fast password hasher.

The database is whatever DATABASE_URL says (SQLite by default, PostgreSQL in CI's second run).
"""

import os
import tempfile

os.environ.setdefault("SECRET_KEY", "test-secret-key-not-for-production")
os.environ.setdefault("DEBUG", "0")
# PostgreSQL's statement bound (3 s in production) sized for a test machine that CI may share
# with other runs (a 6-row query once waited 3.5 s there and answered 503), still short enough
# that a lock wait the concurrency tests must not see fails them. The tests of the
# bound itself set their own (tests/api/test_database_outage.py).
os.environ.setdefault("DB_STATEMENT_TIMEOUT", "10")

from flagadmin.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGGING["root"]["level"] = "WARNING"  # noqa: F405
# Tests change flags and read them back at once: no reuse of client-token lookups between
# requests (tests/client_api/test_client_api.py turns it on where it is the subject).
CLIENT_API_REUSE_SECONDS = 0

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A test database in a file rather than shared-cache memory: in shared-cache mode a second
    # writer fails at once with "database table is locked" instead of waiting out the busy
    # timeout, so threaded tests (concurrent creations) would not behave as production does.
    # One file per test process, so that runs in parallel checkouts do not collide.
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": os.path.join(tempfile.gettempdir(), f"flagadmin-test-{os.getpid()}.sqlite3")
    }
