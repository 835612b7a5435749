"""The developers' path: `manage.py` on a fresh checkout writes the local .env with a generated
key; production (no .env, DEBUG off, gunicorn's WSGI entry point) still refuses to start
without SECRET_KEY."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from flagadmin.localenv import write_local_env

ROOT = Path(__file__).resolve().parents[2]


def test_write_local_env__fresh_checkout__writes_owner_only_key(tmp_path):
    path = tmp_path / ".env"

    assert write_local_env(path, environ={}) is True

    lines = path.read_text().splitlines()
    assert lines[0] == "# Written by manage.py; see .env.example for every variable."
    assert lines[1].startswith("SECRET_KEY=")
    assert len(lines[1]) > len("SECRET_KEY=") + 50
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "environ",
    [
        pytest.param({"SECRET_KEY": "given"}, id="key-given"),
        pytest.param({"ENV_FILE": ""}, id="env-file-none"),
        pytest.param({"ENV_FILE": "/etc/flagadmin.env"}, id="env-file-elsewhere"),
    ],
)
def test_write_local_env__key_given_otherwise__writes_nothing(tmp_path, environ):
    path = tmp_path / ".env"

    assert write_local_env(path, environ=environ) is False
    assert not path.exists()


def test_write_local_env__existing_file_kept(tmp_path):
    path = tmp_path / ".env"
    path.write_text("SECRET_KEY=mine\n")

    assert write_local_env(path, environ={}) is False
    assert path.read_text() == "SECRET_KEY=mine\n"


def _without_key() -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG"}}
    environ["DJANGO_SETTINGS_MODULE"] = "flagadmin.settings"
    environ["ENV_FILE"] = ""  # as production: no .env
    return environ


def test_production_wsgi_without_secret_key__refuses_to_start():
    result = subprocess.run(
        [sys.executable, "-c", "import flagadmin.wsgi"],
        cwd=ROOT,
        env=_without_key(),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert "SECRET_KEY must be set unless DEBUG is on" in result.stderr


def test_manage_py_with_env_file_none__does_not_write_a_key():
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=_without_key(),
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert "SECRET_KEY must be set unless DEBUG is on" in result.stderr
    assert "Wrote .env" not in result.stderr
