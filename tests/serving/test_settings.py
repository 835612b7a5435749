"""Settings from the environment: DATABASE_URL, SECRET_KEY, DEBUG, lists, the .env file."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from flagadmin import settings as settings_module
from flagadmin.settings import BASE_DIR, _load_dotenv, database_from_url, env_bool, env_list


@pytest.mark.parametrize(
    ("url", "name"),
    [
        pytest.param("sqlite:///db.sqlite3", str(BASE_DIR / "db.sqlite3"), id="relative"),
        pytest.param("sqlite:///var/x.db", str(BASE_DIR / "var/x.db"), id="relative-dir"),
        pytest.param("sqlite:////tmp/flag%20admin.db", "/tmp/flag admin.db", id="absolute"),
        pytest.param("sqlite:///:memory:", ":memory:", id="memory"),
        pytest.param("sqlite://", ":memory:", id="empty"),
    ],
)
def test_database_url__sqlite(url, name):
    database = database_from_url(url)

    assert database["ENGINE"] == "django.db.backends.sqlite3"
    assert database["NAME"] == name
    # Writers queue instead of failing with "database is locked".
    assert database["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert database["OPTIONS"]["timeout"] == 30
    assert "journal_mode=WAL" in database["OPTIONS"]["init_command"]


PREPARE_ONLY_WHEN_ASKED = 2**31 - 1
PREPARED = {"prepare_threshold": PREPARE_ONLY_WHEN_ASKED}


def test_database_url__postgres_every_part(monkeypatch):
    # The production default bound (the test settings raise it, tests/settings.py).
    monkeypatch.setattr(settings_module, "DB_STATEMENT_TIMEOUT", 3)
    database = database_from_url(
        "postgres://flag%40admin:p%3Ass%2Fw@db.example.com:6543/flags?sslmode=require"
    )

    assert database == {
        "ENGINE": "flagadmin.serving.postgresql",
        "NAME": "flags",
        "USER": "flag@admin",
        "PASSWORD": "p:ss/w",
        "HOST": "db.example.com",
        "PORT": "6543",
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {
            "sslmode": "require",
            "connect_timeout": "2",
            "options": "-c statement_timeout=3000",
            "prepare_threshold": PREPARE_ONLY_WHEN_ASKED,
        },
    }


@pytest.mark.parametrize("scheme", ["postgres", "postgresql", "pgsql", "POSTGRES"])
def test_database_url__postgres_schemes_and_defaults(scheme):
    database = database_from_url(f"{scheme}://postgres@127.0.0.1/flagadmin")

    assert database["ENGINE"] == "flagadmin.serving.postgresql"
    assert (database["USER"], database["PASSWORD"], database["HOST"], database["PORT"]) == (
        "postgres",
        "",
        "127.0.0.1",
        "",
    )
    assert database["NAME"] == "flagadmin"


def test_database_url__conn_max_age_from_env(monkeypatch):
    monkeypatch.setenv("DB_CONN_MAX_AGE", "0")

    assert database_from_url("postgres://u@h/n")["CONN_MAX_AGE"] == 0


@pytest.mark.parametrize(
    ("query", "statement_timeout", "expected"),
    [
        pytest.param(
            "",
            3,
            {"connect_timeout": "2", "options": "-c statement_timeout=3000", **PREPARED},
            id="defaults",
        ),
        pytest.param(
            "?connect_timeout=10&options=-c%20search_path%3Dflags",
            1.5,
            {
                "connect_timeout": "10",
                "options": "-c search_path=flags -c statement_timeout=1500",
                **PREPARED,
            },
            id="url-options-kept",
        ),
        pytest.param("", 0, {"connect_timeout": "2", **PREPARED}, id="statement-timeout-off"),
        pytest.param(
            "?options=-c%20statement_timeout%3D0",
            3,
            {"connect_timeout": "2", "options": "-c statement_timeout=0", **PREPARED},
            id="url-statement-timeout-wins",
        ),
    ],
)
def test_database_url__postgres_timeouts(monkeypatch, query, statement_timeout, expected):
    monkeypatch.setattr(settings_module, "DB_STATEMENT_TIMEOUT", statement_timeout)

    assert database_from_url(f"postgres://u@h/n{query}")["OPTIONS"] == expected


@pytest.mark.parametrize(
    ("prepared", "threshold"), [(True, PREPARE_ONLY_WHEN_ASKED), (False, None)]
)
def test_database_url__prepared_statements(monkeypatch, prepared, threshold):
    # psycopg prepares a statement run with prepare=True only under a threshold that is not
    # None; the huge threshold keeps it from preparing any other statement on its own.
    monkeypatch.setattr(settings_module, "DB_PREPARED_STATEMENTS", prepared)

    assert database_from_url("postgres://u@h/n")["OPTIONS"]["prepare_threshold"] == threshold


def test_database_url__unsupported_scheme():
    with pytest.raises(ImproperlyConfigured, match="'mysql' is not supported"):
        database_from_url("mysql://u@h/n")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1", True),
        ("true", True),
        ("Yes", True),
        ("on", True),
        ("0", False),
        ("false", False),
        ("no", False),
        ("", False),
        (None, False),
    ],
)
def test_env_bool(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("FLAG_TEST_BOOL", raising=False)
    else:
        monkeypatch.setenv("FLAG_TEST_BOOL", value)

    assert env_bool("FLAG_TEST_BOOL") is expected


def test_env_list(monkeypatch):
    monkeypatch.setenv("FLAG_TEST_LIST", " a.example.com, ,b.example.com ")

    assert env_list("FLAG_TEST_LIST") == ["a.example.com", "b.example.com"]
    assert env_list("FLAG_TEST_UNSET_LIST", "x,y") == ["x", "y"]


def test_dotenv__fills_only_unset_variables(tmp_path, monkeypatch):
    env_file = tmp_path / ".env"
    env_file.write_text(
        "# a comment\n"
        "FLAG_TEST_A='quoted value'\n"
        'FLAG_TEST_B="kept?"\n'
        "not a variable line\n"
        "FLAG_TEST_C=x=y\n"
    )
    monkeypatch.delenv("FLAG_TEST_A", raising=False)
    monkeypatch.setenv("FLAG_TEST_B", "from the environment")
    monkeypatch.delenv("FLAG_TEST_C", raising=False)

    _load_dotenv(env_file)

    assert os.environ["FLAG_TEST_A"] == "quoted value"
    assert os.environ["FLAG_TEST_B"] == "from the environment"
    assert os.environ["FLAG_TEST_C"] == "x=y"
    for name in ("FLAG_TEST_A", "FLAG_TEST_C"):
        monkeypatch.delenv(name)


def _import_settings(**env: str) -> subprocess.CompletedProcess:
    """Import the real settings in a fresh interpreter with exactly `env` (and no .env file)."""
    clean = {"PATH": os.environ.get("PATH", ""), "ENV_FILE": "", **env}
    code = (
        "import flagadmin.settings as s; "
        "print(s.DEBUG, s.ALLOWED_HOSTS, s.DATABASES['default']['ENGINE'], s.SECRET_KEY[:8])"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_secret_key__required_when_debug_is_off():
    result = _import_settings()

    assert result.returncode != 0
    assert "SECRET_KEY must be set unless DEBUG is on" in result.stderr


def test_secret_key__optional_with_debug():
    result = _import_settings(DEBUG="1")

    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "True"


def test_settings__from_environment():
    result = _import_settings(
        SECRET_KEY="abcdefgh-rest",
        ALLOWED_HOSTS="flags.example.com",
        DATABASE_URL="postgres://u@h/n",
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "False ['flags.example.com'] flagadmin.serving.postgresql abcdefgh"
    )


@pytest.mark.parametrize("database_url", ["", "  "], ids=["empty", "blank"])
def test_settings__empty_database_url_means_the_sqlite_default(database_url):
    result = _import_settings(SECRET_KEY="abcdefgh-rest", DATABASE_URL=database_url)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "False ['localhost', '127.0.0.1', '[::1]', 'testserver'] django.db.backends.sqlite3 "
        "abcdefgh"
    )


def test_env_file__read_when_named(tmp_path):
    env_file = tmp_path / "prod.env"
    env_file.write_text("SECRET_KEY=from-the-file\nDEBUG=0\n")

    result = _import_settings(ENV_FILE=str(env_file))

    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[-1] == "from-the"


def test_env_example_lists_every_variable_the_settings_read():
    import re

    source = (BASE_DIR / "flagadmin" / "settings.py").read_text()
    read = set(
        re.findall(
            r"""(?:environ\.get|environ\[|env_bool|env_list|getenv)\(\s*["']([A-Z0-9_]+)""", source
        )
    )
    listed = set(
        re.findall(r"^#?\s*([A-Z0-9_]+)=", (BASE_DIR / ".env.example").read_text(), re.MULTILINE)
    )

    assert read, "the pattern no longer finds how settings.py reads the environment"
    assert read - listed == set()
