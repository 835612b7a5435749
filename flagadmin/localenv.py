"""The local `.env` that makes a fresh checkout work with plain `manage.py` commands.

`scripts/serve` writes the same file. Only `manage.py` calls this: the WSGI entry point
(gunicorn) never writes a key, so production without SECRET_KEY and without `.env` still
refuses to start (see `flagadmin.settings`).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

HEADER = "# Written by {writer}; see .env.example for every variable.\n"


def write_local_env(
    path: Path, environ: Mapping[str, str] = os.environ, writer: str = "manage.py"
) -> bool:
    """Write `path` with a generated SECRET_KEY unless a key is already given: SECRET_KEY in
    the environment, ENV_FILE naming another file (or none), or `path` existing. Returns
    whether it wrote the file."""
    if environ.get("SECRET_KEY") or "ENV_FILE" in environ or path.exists():
        return False
    # Readable by its owner only: it holds the key that signs sessions.
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as env_file:
        env_file.write(HEADER.format(writer=writer))
        env_file.write(f"SECRET_KEY={secrets.token_urlsafe(50)}\n")
    return True
