"""Context fields and strategy definitions written at the same instant from several threads:
one creation of a name wins and the others get Unleash's 409 (never a 500), and legal values
added one at a time to one field are all kept (each addition reads the list under the row's
lock)."""

from __future__ import annotations

import json

from rest_framework.test import APIClient

from definitions.models import ContextField, StrategyDefinition
from flagadmin.core.models import AuditEvent, TokenType
from tests.concurrency import concurrent_db, run_together
from tests.factories import ContextFieldFactory, make_token

THREADS = 6


def _clients() -> list[APIClient]:
    token = make_token(TokenType.ADMIN, name="admin-tok")[1]
    clients = [APIClient() for _ in range(THREADS)]
    for client in clients:
        client.credentials(HTTP_AUTHORIZATION=token)
    return clients


def _post(client: APIClient, url: str, body: dict) -> int:
    return client.post(url, json.dumps(body), content_type="application/json").status_code


@concurrent_db
def test_create_context_field__same_name_at_once__one_201_others_409():
    clients = _clients()

    statuses = run_together(
        THREADS, lambda i: _post(clients[i], "/api/admin/context", {"name": "tier"})
    )

    assert sorted(statuses) == [201] + [409] * (THREADS - 1)
    assert ContextField.objects.filter(pk="tier").count() == 1
    assert AuditEvent.objects.filter(type="context-field-created").count() == 1


@concurrent_db
def test_create_strategy__same_name_at_once__one_201_others_409():
    clients = _clients()
    body = {"name": "gate", "parameters": []}

    statuses = run_together(THREADS, lambda i: _post(clients[i], "/api/admin/strategies", body))

    assert sorted(statuses) == [201] + [409] * (THREADS - 1)
    assert StrategyDefinition.objects.filter(pk="gate").count() == 1
    assert AuditEvent.objects.filter(type="strategy-created").count() == 1


@concurrent_db
def test_set_legal_values__one_field_at_once__every_value_kept():
    clients = _clients()
    ContextFieldFactory(name="tier")
    url = "/api/admin/context/tier/legal-values"

    statuses = run_together(THREADS, lambda i: _post(clients[i], url, {"value": f"v{i}"}))

    assert statuses == [200] * THREADS
    values = {item["value"] for item in ContextField.objects.get(pk="tier").legal_values}
    assert values == {f"v{i}" for i in range(THREADS)}
    assert AuditEvent.objects.filter(type="context-field-updated").count() == THREADS
