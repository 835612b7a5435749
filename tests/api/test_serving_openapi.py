"""`/docs/openapi.json` is generated once per process and then served as the same bytes
(flagadmin.api.schema.OpenApiDocumentView): generating it costs a fraction of a second of CPU,
which every request spent again, and concurrent first requests answered 500."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.test import Client, RequestFactory
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.views import SpectacularJSONAPIView

from flagadmin.api.schema import OpenApiDocumentView


@pytest.fixture
def generations(monkeypatch):
    """The number of times the document is generated, from a fresh start of the process."""
    OpenApiDocumentView.forget()
    calls = []
    generate = SchemaGenerator.get_schema

    def counted(self, *args, **kwargs):
        calls.append(threading.get_ident())
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(SchemaGenerator, "get_schema", counted)
    yield calls
    OpenApiDocumentView.forget()


def test_openapi_document__generated_once__same_bytes_each_time(generations):
    client = Client()

    first = client.get("/docs/openapi.json")
    second = client.get("/docs/openapi.json")

    assert generations == [generations[0]]
    assert first.status_code == second.status_code == 200
    assert first["Content-Type"] == second["Content-Type"] == "application/vnd.oai.openapi+json"
    assert first["Content-Disposition"] == 'inline; filename="flagadmin admin API.json"'
    assert second.content == first.content
    assert first.json()["openapi"] == "3.0.3"


def test_openapi_document__concurrent_first_requests__generated_once(generations):
    def fetch(_: int) -> tuple[int, bytes]:
        response = Client().get("/docs/openapi.json")
        return response.status_code, response.content

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(fetch, range(16)))

    assert len(generations) == 1
    assert {status for status, _ in answers} == {200}
    assert len({body for _, body in answers}) == 1


@pytest.mark.parametrize(
    "accept",
    [
        pytest.param("*/*", id="any"),
        pytest.param("application/json", id="json"),
        pytest.param("application/json; indent=2", id="json-indent-2"),
    ],
)
def test_openapi_document__what_drf_spectaculars_own_view_answers(generations, accept):
    request = RequestFactory().get("/docs/openapi.json", HTTP_ACCEPT=accept)
    expected = SpectacularJSONAPIView.as_view()(request)
    expected.render()

    kept = OpenApiDocumentView.as_view()(
        RequestFactory().get("/docs/openapi.json", HTTP_ACCEPT=accept)
    )

    assert kept.status_code == expected.status_code == 200
    assert sorted(kept.items()) == sorted(expected.items())
    assert kept.content == expected.content


def test_openapi_document__settings_changed__generated_again(generations, settings):
    Client().get("/docs/openapi.json")

    settings.SPECTACULAR_SETTINGS = {**settings.SPECTACULAR_SETTINGS, "VERSION": "2.0.0"}
    Client().get("/docs/openapi.json")

    assert len(generations) == 2
