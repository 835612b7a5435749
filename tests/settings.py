"""Test settings: the real settings, with a throwaway SECRET_KEY and a fast password hasher.

The database is whatever DATABASE_URL says (SQLite by default, PostgreSQL in CI's second run).
"""

import os

os.environ.setdefault("SECRET_KEY", "test-secret-key-not-for-production")
os.environ.setdefault("DEBUG", "0")

from flagadmin.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
LOGGING["root"]["level"] = "WARNING"  # noqa: F405
