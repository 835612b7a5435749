"""Sign-in throttling (django-axes) on the Django admin's password form: lockout of an account
from an address (the pair: one person behind an office's NAT locks out nobody else), refused
before any password is hashed, a clear 429 page (the error body under /api/), and the user's
`login_attempts`."""

from __future__ import annotations

import json
import re
import uuid
from unittest import mock

import pytest
from django.contrib.auth.hashers import MD5PasswordHasher
from django.core.management import call_command
from django.test import Client, RequestFactory

from flagadmin.api.signin import lockout_response
from flagadmin.core.models import Role
from flagadmin.serving.client_address import signin_client_address
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

LOGIN = "/admin/login/"
PASSWORD = "correct horse battery staple"
LOCKED_MESSAGE = (
    "Too many failed sign-ins for this account from this address. Try again in 15 minutes."
)
EITHER_LOCKED_MESSAGE = (
    "Too many failed sign-ins for this account or from this address. Try again in 15 minutes."
)


@pytest.fixture
def admin_user():
    user = UserFactory(username="root", root_role_id=Role.ADMIN)
    user.set_password(PASSWORD)
    user.save()
    return user


def attempt(username: str, password: str, address: str = "10.0.0.1"):
    return Client(REMOTE_ADDR=address).post(
        LOGIN, {"username": username, "password": password, "next": "/admin/"}
    )


def assert_locked_out_page(response, message: str = LOCKED_MESSAGE) -> None:
    assert response.status_code == 429
    assert response["Content-Type"] == "text/html; charset=utf-8"
    assert response["Retry-After"] == "900"
    text = re.sub(r"\s+", " ", response.content.decode())
    assert "<h1>Too many failed sign-ins</h1>" in text
    assert message in text


def test_admin_login__correct_password__signed_in(admin_user):
    response = attempt("root", PASSWORD)

    assert response.status_code == 302
    assert response["Location"] == "/admin/"


def test_admin_login__failures_below_limit__form_again(admin_user):
    for _ in range(4):
        response = attempt("root", "wrong")
        assert response.status_code == 200
        assert "Please enter the correct username and password" in response.content.decode()

    assert attempt("root", PASSWORD).status_code == 302


def test_admin_login__fifth_failure__locked_out_page(admin_user):
    responses = [attempt("root", "wrong") for _ in range(5)]

    assert [r.status_code for r in responses] == [200, 200, 200, 200, 429]
    assert_locked_out_page(responses[-1])


def test_admin_login__locked_out__correct_password_refused_without_hashing(admin_user):
    for _ in range(5):
        attempt("root", "wrong")

    with (
        mock.patch.object(MD5PasswordHasher, "verify", autospec=True) as verify,
        mock.patch.object(MD5PasswordHasher, "encode", autospec=True) as encode,
    ):
        response = attempt("root", PASSWORD)

    assert_locked_out_page(response)
    verify.assert_not_called()
    encode.assert_not_called()


def test_admin_login__unlocked_attempt__does_hash(admin_user):
    with mock.patch.object(
        MD5PasswordHasher, "verify", autospec=True, return_value=False
    ) as verify:
        attempt("root", "wrong")

    verify.assert_called_once()


@pytest.fixture
def other_admin(db):
    user = UserFactory(username="other", root_role_id=Role.ADMIN)
    user.set_password(PASSWORD)
    user.save()
    return user


def test_admin_login__locked_account__locked_from_that_address_only(admin_user, other_admin):
    for _ in range(5):
        attempt("root", "wrong", address="10.0.3.1")

    assert_locked_out_page(attempt("root", PASSWORD, address="10.0.3.1"))
    assert_locked_out_page(attempt("ROOT", PASSWORD, address="10.0.3.1"))
    # Another account from the same address (the office's NAT), and the same account from
    # elsewhere, sign in.
    assert attempt("other", PASSWORD, address="10.0.3.1")["Location"] == "/admin/"
    assert attempt("root", PASSWORD, address="10.0.3.2")["Location"] == "/admin/"


def test_admin_login__failures_of_many_accounts_from_one_address__others_not_locked(
    admin_user,
):
    for index in range(5):
        attempt(f"someone-{index}", "wrong", address="10.0.3.1")

    assert attempt("root", PASSWORD, address="10.0.3.1")["Location"] == "/admin/"


def test_admin_login__failures_of_one_account_from_many_addresses__not_locked(admin_user):
    # Only the pair locks: spreading guesses over addresses is not stopped by the lockout
    # (docs/sign-in.md says what is), and no address can lock the account out of another.
    for index in range(5):
        attempt("ROOT" if index % 2 else "root", "wrong", address=f"10.0.1.{index}")

    assert attempt("root", PASSWORD, address="10.0.2.1")["Location"] == "/admin/"


@pytest.mark.parametrize(
    ("failed_from", "failed_as"),
    [
        pytest.param(
            ["10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.1.4", "10.0.1.5"],
            ["root"] * 5,
            id="one-account-many-addresses",
        ),
        pytest.param(
            ["10.0.2.1"] * 5, [f"someone-{i}" for i in range(5)], id="one-address-many-accounts"
        ),
    ],
)
def test_admin_login__lockout_by_either__configured__locks_as_before(
    settings, admin_user, failed_from, failed_as
):
    settings.AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # SIGNIN_LOCKOUT_BY=a,b
    for address, username in zip(failed_from, failed_as, strict=True):
        attempt(username, "wrong", address=address)

    response = attempt("root", PASSWORD, address=failed_from[-1])

    assert_locked_out_page(response, EITHER_LOCKED_MESSAGE)


def test_admin_login__unlocked_by_axes_reset__signs_in(admin_user):
    for _ in range(5):
        attempt("root", "wrong")

    call_command("axes_reset")  # what an administrator runs to unlock before the cool-off ends

    assert attempt("root", PASSWORD).status_code == 302


def test_admin_login__failures_counted_in_login_attempts_reset_on_success(admin_user):
    attempt("root", "wrong")
    attempt("Root", "wrong")
    admin_user.refresh_from_db()
    assert admin_user.login_attempts == 2

    attempt("root", PASSWORD)

    admin_user.refresh_from_db()
    assert admin_user.login_attempts == 0


def test_admin_login__attempts_during_lockout__not_counted(admin_user):
    for _ in range(9):
        attempt("root", "wrong")

    admin_user.refresh_from_db()
    assert admin_user.login_attempts == 5  # the four refused by the lockout count nothing


def test_lockout_response__under_api__429_error_body():
    # No sign-in is served under /api/ today; a lockout there answers as every API error does.
    request = RequestFactory().post("/api/admin/login")

    response = lockout_response(request)

    assert response.status_code == 429
    assert response["Content-Type"] == "application/json"
    assert response["Retry-After"] == "900"
    body = json.loads(response.content)
    uuid.UUID(body["id"], version=4)
    assert body == {"id": body["id"], "name": "TooManyRequestsError", "message": LOCKED_MESSAGE}


@pytest.mark.parametrize(
    ("proxies", "forwarded_for", "expected"),
    [
        pytest.param(0, "203.0.113.9", "10.9.9.9", id="no-proxies-header-ignored"),
        pytest.param(1, "203.0.113.9", "203.0.113.9", id="one-proxy"),
        pytest.param(1, "6.6.6.6, 203.0.113.9", "203.0.113.9", id="one-proxy-client-prefix"),
        pytest.param(2, "6.6.6.6, 203.0.113.9, 10.1.1.1", "203.0.113.9", id="two-proxies"),
        pytest.param(2, "203.0.113.9", "10.9.9.9", id="header-too-short"),
        pytest.param(1, "", "10.9.9.9", id="no-header"),
    ],
)
def test_signin_client_address__proxy_count__outermost_proxys_entry(
    settings, proxies, forwarded_for, expected
):
    settings.SIGNIN_PROXY_COUNT = proxies
    request = RequestFactory().get(
        "/admin/login/", REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR=forwarded_for
    )

    assert signin_client_address(request) == expected


def test_admin_login__behind_a_proxy__locked_per_forwarded_address(settings, admin_user):
    settings.SIGNIN_PROXY_COUNT = 1

    def through_proxy(username: str, password: str, client: str):
        return Client(REMOTE_ADDR="10.0.0.254", HTTP_X_FORWARDED_FOR=client).post(
            LOGIN, {"username": username, "password": password, "next": "/admin/"}
        )

    for _ in range(5):
        through_proxy("root", "wrong", client="198.51.100.7")

    assert through_proxy("root", PASSWORD, client="198.51.100.7").status_code == 429
    assert through_proxy("root", PASSWORD, client="198.51.100.8").status_code == 302
