"""INIT_ADMIN_API_TOKENS / INIT_CLIENT_API_TOKENS, and the token management commands."""

from __future__ import annotations

import io
import logging
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from rest_framework.test import APIClient

from flagadmin.core.bootstrap import bootstrap_api_tokens
from flagadmin.core.models import ApiToken, TokenType
from flagadmin.core.tokens import ensure_bootstrap_tokens, parse_bootstrap_token
from tests.conftest import assert_error
from tests.factories import UserFactory, make_token

ADMIN = "*:*.bootstrap-admin-secret-0123456789"
CLIENT = "default:development.bootstrap-client-secret-0123456789"
URL = "/api/admin/api-tokens"


def _get(token: str):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=token)
    return client.get(URL)


# --- bootstrap from the environment ----------------------------------------------------------


def test_bootstrap__creates_tokens_that_work(db, settings):
    settings.INIT_ADMIN_API_TOKENS = [ADMIN]
    settings.INIT_CLIENT_API_TOKENS = [CLIENT]

    bootstrap_api_tokens()

    assert _get(ADMIN).status_code == 200
    assert_error(_get(CLIENT), 403, "NoAccessError")
    admin = ApiToken.objects.get(type=TokenType.ADMIN)
    client = ApiToken.objects.get(type=TokenType.CLIENT)
    assert (admin.prefix, admin.project, admin.environment) == ("*:*", "*", "*")
    assert (client.prefix, client.project, client.environment) == (
        "default:development",
        "default",
        "development",
    )


def test_bootstrap__stores_only_digests(db):
    ensure_bootstrap_tokens([ADMIN], [CLIENT])

    for row in ApiToken.objects.values():
        text = str(row)
        assert "bootstrap-admin-secret" not in text
        assert "bootstrap-client-secret" not in text
    assert set(ApiToken.objects.values_list("digest", flat=True)) == {
        ApiToken.digest_of(ADMIN),
        ApiToken.digest_of(CLIENT),
    }


def test_bootstrap__idempotent(db):
    assert ensure_bootstrap_tokens([ADMIN], [CLIENT]) == 2

    assert ensure_bootstrap_tokens([ADMIN], [CLIENT]) == 0
    assert ensure_bootstrap_tokens([ADMIN, ADMIN], []) == 0
    assert ApiToken.objects.count() == 2


def test_bootstrap__revoked_token_stays_revoked(db):
    ensure_bootstrap_tokens([ADMIN], [])
    ApiToken.objects.update(revoked_at=timezone.now())

    ensure_bootstrap_tokens([ADMIN], [])

    assert_error(_get(ADMIN), 401, "AuthenticationRequired")


@pytest.mark.parametrize(
    ("admin_tokens", "client_tokens"),
    [
        pytest.param(["no-dot-here"], [], id="no-secret"),
        pytest.param(["*:*."], [], id="empty-secret"),
        pytest.param(["secret-without-scope.abc"], [], id="no-colon"),
        pytest.param([CLIENT], [], id="client-token-in-admin-list"),
        pytest.param([], [ADMIN], id="admin-token-in-client-list"),
    ],
)
def test_bootstrap__malformed_tokens_are_skipped_and_logged(
    db, caplog, admin_tokens, client_tokens
):
    with caplog.at_level(logging.ERROR, logger="flagadmin.core.tokens"):
        assert ensure_bootstrap_tokens(admin_tokens, client_tokens) == 0

    assert not ApiToken.objects.exists()
    assert "ignoring a bootstrap token" in caplog.text
    for token in admin_tokens + client_tokens:
        if "." in token and token.split(".", 1)[1]:
            assert token.split(".", 1)[1] not in caplog.text  # never log a secret


def test_bootstrap__nothing_configured_touches_nothing(db, settings, django_assert_num_queries):
    settings.INIT_ADMIN_API_TOKENS = []
    settings.INIT_CLIENT_API_TOKENS = []

    with django_assert_num_queries(0):
        bootstrap_api_tokens()


def test_bootstrap__runs_after_migrate(db, settings):
    settings.INIT_ADMIN_API_TOKENS = [ADMIN]

    call_command("migrate", "flagadmin", verbosity=0)

    assert ApiToken.objects.filter(digest=ApiToken.digest_of(ADMIN)).exists()


# --- manage.py createapitoken -----------------------------------------------------------------


def _command(*args: str) -> list[str]:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip().splitlines()


def test_createapitoken__admin__printed_once_stored_as_digest(db):
    lines = _command("createapitoken", "--name", "ops")

    secret = lines[-1]
    assert secret.startswith("*:*.")
    token = ApiToken.objects.get()
    assert (token.name, token.type, token.digest) == ("ops", "admin", ApiToken.digest_of(secret))
    assert secret.split(".")[1] not in str(ApiToken.objects.values().get())
    assert _get(secret).status_code == 200


def test_createapitoken__client_with_scope(db):
    secret = _command(
        "createapitoken",
        "--type",
        "client",
        "--projects",
        "default",
        "--environment",
        "production",
        "--quiet-token",
    )[0]

    assert secret.startswith("default:production.")
    token = ApiToken.objects.get()
    assert (token.project, token.environment) == ("default", "production")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--type", "client", "--projects", "nope"], "unknown project(s): nope", id="project"
        ),
        pytest.param(
            ["--type", "client", "--environment", "staging"],
            "unknown environment: staging",
            id="environment",
        ),
        pytest.param(["--type", "personal"], "personal tokens need --user", id="no-user"),
        pytest.param(
            ["--type", "personal", "--user", "ghost"], "no single user matches 'ghost'", id="ghost"
        ),
        pytest.param(
            ["--type", "personal", "--user", "admin-token"],
            "'admin-token' is a system user: use --type admin instead",
            id="system-user",
        ),
        pytest.param(
            ["--expires-at", "2000-01-01T00:00:00Z"],
            "--expires-at must be in the future",
            id="past-expiry",
        ),
        pytest.param(
            ["--expires-at", "soon"], "--expires-at: not an ISO 8601 date-time: soon", id="bad-date"
        ),
        pytest.param(["--user", "someone"], "--user applies to personal tokens only", id="user"),
    ],
)
def test_createapitoken__refuses_bad_options(db, args, message):
    with pytest.raises(CommandError) as excinfo:
        _command("createapitoken", *args)

    assert str(excinfo.value) == message
    assert not ApiToken.objects.exists()


def test_createapitoken__personal_acts_as_the_user(db):
    viewer = UserFactory(username="vic", root_role_id=3)

    secret = _command("createapitoken", "--type", "personal", "--user", "VIC", "--quiet-token")[0]

    assert secret.startswith("user:")
    assert ApiToken.objects.get().user == viewer
    assert_error(_get(secret), 403, "NoAccessError")


def test_createapitoken__expiry(db):
    _command("createapitoken", "--expires-at", "2999-01-01T00:00:00")

    assert ApiToken.objects.get().expires_at.isoformat() == "2999-01-01T00:00:00+00:00"


# --- manage.py ensureadmintoken --------------------------------------------------------------


def test_ensureadmintoken__creates_one_when_none(db):
    lines = _command("ensureadmintoken")

    secret = lines[1]
    assert secret.startswith("*:*.")
    assert lines[2] == (
        f'Call the API with: curl -H "Authorization: {secret}" '
        "http://127.0.0.1:8000/api/admin/projects"
    )
    assert _get(secret).status_code == 200
    assert ApiToken.objects.get().digest == ApiToken.digest_of(secret)


def test_ensureadmintoken__says_so_when_one_exists(db):
    make_token(TokenType.ADMIN, name="mine")

    text = "\n".join(_command("ensureadmintoken", "--base-url", "http://127.0.0.1:9000/"))

    assert "An admin API token exists already ('mine'" in text
    assert "manage.py createapitoken --type admin" in text
    assert "http://127.0.0.1:9000/api/admin/projects" in text
    assert ApiToken.objects.count() == 1


@pytest.mark.parametrize("state", ["revoked", "expired"])
def test_ensureadmintoken__unusable_tokens_do_not_count(db, state):
    token, _ = make_token(TokenType.ADMIN)
    if state == "revoked":
        token.revoked_at = timezone.now()
    else:
        token.expires_at = timezone.now() - timedelta(minutes=1)
    token.save()

    lines = _command("ensureadmintoken")

    assert lines[1].startswith("*:*.")
    assert ApiToken.objects.count() == 2


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param("*:*.abc123", ("admin", ["*"], "*"), id="admin"),
        pytest.param(
            "default:development.abc", ("client", ["default"], "development"), id="client"
        ),
        pytest.param("web.app:prod.eu.abc", ("client", ["web.app"], "prod.eu"), id="dotted-names"),
    ],
)
def test_parse_bootstrap_token__splits_at_the_last_dot(raw, expected):
    assert parse_bootstrap_token(raw) == expected
