"""Requests answered from a worker's memory before Django's request handling
(flagadmin/serving/answered_from_memory.py): the answer is the one the whole stack gives, byte
for byte, and whatever cannot be answered so goes on to Django unchanged."""

from __future__ import annotations

import json
import re

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, connection
from django.test import RequestFactory

from client_api.middleware import memory_answerer as client_memory_answerer
from flagadmin.core.models import TokenType
from flagadmin.serving.answered_from_memory import AnsweredFromMemory
from frontend_api.middleware import memory_answerer
from tests.factories import make_token
from tests.frontend_api.test_frontend_api import flags, fresh_frontend_memory  # noqa: F401

FRONTEND = "/api/frontend"


@pytest.fixture
def handled_as_in_tests():
    """Django's handler without its connection closing, as Django's test client runs it: the
    test's transaction must outlive each request."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def signals_sent(handled_as_in_tests) -> list[str]:
    sent: list[str] = []

    def started(**kwargs):
        sent.append("started")

    def finished(**kwargs):
        sent.append("finished")

    request_started.connect(started, weak=False)
    request_finished.connect(finished, weak=False)
    yield sent
    request_started.disconnect(started)
    request_finished.disconnect(finished)


@pytest.fixture
def token(flags, settings) -> str:  # noqa: F811
    settings.CLIENT_API_REUSE_SECONDS = 60
    return make_token(TokenType.FRONTEND, projects=["*"], environment="development")[1]


def environ(path: str = FRONTEND, method: str = "GET", data=None, **headers) -> dict:
    request = RequestFactory().generic(method, path, **headers)
    if data:
        request = RequestFactory().get(path, data, **headers)
    return dict(request.environ)


def answer(application, environ: dict) -> tuple[str, list[tuple[str, str]], bytes]:
    started: list = []

    def start_response(status, headers, exc_info=None):
        started.append((status, headers))

    result = application(dict(environ), start_response)
    body = b"".join(result)
    if hasattr(result, "close"):
        result.close()  # as a WSGI server does: Django's request_finished
    status, headers = started[0]
    # An error's id is new each time.
    return status, sorted(headers), re.sub(rb'"id":"[0-9a-f-]{36}"', b'"id":"-"', body)


QUERY = {"userId": "1", "sessionId": "s", "properties[country]": "no"}


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="plain"),
        pytest.param({"HTTP_ORIGIN": "https://app.example"}, id="origin"),
        pytest.param({"HTTP_IF_NONE_MATCH": "*"}, id="if-none-match"),
    ],
)
def test_answered_from_memory__the_whole_stack_s_answer(token, signals_sent, headers):
    django = WSGIHandler()
    application = AnsweredFromMemory(django, {FRONTEND: memory_answerer()})
    asked = environ(data=QUERY, HTTP_AUTHORIZATION=token, **headers)

    by_django = answer(django, asked)  # the token is looked up there, then remembered
    signals_sent.clear()
    from_memory = answer(application, asked)

    assert signals_sent == []  # Django's handler was not entered
    assert from_memory == by_django
    assert by_django[0] in ("200 OK", "304 Not Modified")


def test_answered_from_memory__client_address_from_the_local_nginx(
    token, signals_sent, settings, admin_client
):
    settings.CLIENT_ADDRESS_FROM_LOCAL_PROXY = True
    django = WSGIHandler()
    application = AnsweredFromMemory(django, {FRONTEND: memory_answerer()})
    asked = environ(data=QUERY, HTTP_AUTHORIZATION=token, HTTP_X_REAL_IP="10.1.2.3")
    asked["REMOTE_ADDR"] = ""

    by_django = answer(django, asked)
    signals_sent.clear()
    from_memory = answer(application, asked)

    assert signals_sent == []
    assert from_memory == by_django


@pytest.mark.parametrize(
    "asked",
    [
        pytest.param(lambda token: environ(data=QUERY), id="no-token"),
        pytest.param(lambda token: environ(HTTP_AUTHORIZATION="*:development.nope"), id="unknown"),
        pytest.param(
            lambda token: environ(HTTP_AUTHORIZATION=token, HTTP_HOST="evil.example"),
            id="refused-host",
        ),
        pytest.param(lambda token: environ(method="POST", HTTP_AUTHORIZATION=token), id="post"),
        pytest.param(lambda token: environ(method="HEAD", HTTP_AUTHORIZATION=token), id="head"),
        pytest.param(lambda token: environ(f"{FRONTEND}/", HTTP_AUTHORIZATION=token), id="slash"),
    ],
)
def test_answered_from_memory__anything_else_goes_on_to_django(token, signals_sent, asked):
    django = WSGIHandler()
    application = AnsweredFromMemory(django, {FRONTEND: memory_answerer()})
    answer(django, environ(data=QUERY, HTTP_AUTHORIZATION=token))  # the token is remembered
    request = asked(token)

    by_django = answer(django, request)
    signals_sent.clear()
    through = answer(application, request)

    assert signals_sent == ["started", "finished"]
    assert through == by_django


def test_answered_from_memory__an_answer_that_fails__django_answers(signals_sent, db):
    def failing(request):
        raise RuntimeError("the database went away")

    def django(environ, start_response):
        start_response("503 Service Unavailable", [("Content-Type", "application/json")])
        return [b"{}"]

    application = AnsweredFromMemory(django, {FRONTEND: failing})

    assert answer(application, environ()) == (
        "503 Service Unavailable",
        [("Content-Type", "application/json")],
        b"{}",
    )


def test_answered_from_memory__an_answer_that_read_the_database__finished_as_a_request(
    signals_sent, db
):
    def reading(request):
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return None

    def django(environ, start_response):
        start_response("200 OK", [])
        return [b""]

    answer(AnsweredFromMemory(django, {FRONTEND: reading}), environ())

    assert signals_sent == ["finished"]


def test_answered_from_memory__built_from_the_setting():
    application = AnsweredFromMemory(WSGIHandler())

    assert sorted(application.answerers) == ["/api/client/features", FRONTEND]
    assert all(callable(answerer) for answerer in application.answerers.values())


# --- GET /api/client/features -------------------------------------------------------------------

CLIENT_FEATURES = "/api/client/features"


@pytest.fixture
def client_token(admin_client, settings) -> str:
    settings.CLIENT_API_REUSE_SECONDS = 60
    response = admin_client.post(
        "/api/admin/projects/default/features",
        json.dumps({"name": "checkout"}),
        content_type="application/json",
    )
    assert response.status_code == 201
    return make_token(TokenType.CLIENT, projects=["*"], environment="development")[1]


@pytest.mark.parametrize(
    "headers",
    [
        pytest.param({}, id="plain"),
        pytest.param({"HTTP_UNLEASH_CLIENT_SPEC": "5.2.0"}, id="segments-listed"),
        pytest.param({"HTTP_IF_NONE_MATCH": "etag"}, id="if-none-match"),
    ],
)
def test_answered_from_memory__client_features__the_whole_stack_s_answer(
    client_token, signals_sent, headers
):
    django = WSGIHandler()
    application = AnsweredFromMemory(django, {CLIENT_FEATURES: client_memory_answerer()})
    first = answer(django, environ(CLIENT_FEATURES, HTTP_AUTHORIZATION=client_token))
    etag = dict(first[1])["ETag"]
    if headers.get("HTTP_IF_NONE_MATCH"):
        headers = {"HTTP_IF_NONE_MATCH": etag}
    asked = environ(CLIENT_FEATURES, HTTP_AUTHORIZATION=client_token, **headers)

    by_django = answer(django, asked)
    signals_sent.clear()
    from_memory = answer(application, asked)

    assert signals_sent == []
    assert from_memory == by_django
    assert by_django[0] == ("304 Not Modified" if "HTTP_IF_NONE_MATCH" in headers else "200 OK")
