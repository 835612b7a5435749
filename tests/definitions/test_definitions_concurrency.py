"""Context fields and strategy definitions written at the same instant from several threads:
one creation of a name wins and the others get Unleash's 409 (never a 500), and legal values
added one at a time to one field are all kept (each addition reads the list under the row's
lock)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable

import pytest
from django.db import connection
from rest_framework.test import APIClient

from definitions.models import ContextField, StrategyDefinition
from features.models import FeatureStrategy
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


# --- a strategy written while the definitions it names are deleted or changed ----------------

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite runs one writer at a time"
)
STRATEGIES = "/api/admin/projects/default/features/f/environments/development/strategies"


def _blocked_on_a_lock() -> bool:
    with connection.cursor() as cursor:
        # pg_locks is read live (pg_stat_activity is a snapshot for the whole transaction).
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return cursor.fetchone()[0] > 0


class _DuringTheCheck:
    """Runs `other_write` in another thread once a strategy write has checked the definitions
    (`check_definitions`), and lets the write go on once the other one is done or waits for a
    lock. `status` is the other write's status, `join()` waits for it."""

    def __init__(self, monkeypatch, other_write: Callable[[], int]) -> None:
        import features.strategy_services as strategy_services

        self.status: int | None = None
        self._thread: threading.Thread | None = None
        check = strategy_services.check_definitions

        def run_other_write() -> None:
            try:
                self.status = other_write()
            finally:
                connection.close()  # the thread's own connection

        def checked_then_other_write(*args, **kwargs) -> None:
            check(*args, **kwargs)
            self._thread = threading.Thread(target=run_other_write)
            self._thread.start()
            while self._thread.is_alive() and not _blocked_on_a_lock():
                self._thread.join(0.01)

        monkeypatch.setattr(strategy_services, "check_definitions", checked_then_other_write)

    def join(self) -> int | None:
        assert self._thread is not None, "the strategy write never checked the definitions"
        self._thread.join()
        return self.status


@postgresql_only
@concurrent_db
def test_delete_strategy_type__while_a_strategy_of_it_is_added__never_both(monkeypatch):
    """The add checks the type, then the delete runs: before the add's transaction held the
    definition, the delete found no strategy of it and both answered 200, leaving a strategy of
    a type that no longer exists. Now the delete waits for the add and answers 409."""
    adding, deleting = _clients()[:2]
    assert _post(adding, "/api/admin/strategies", {"name": "gate", "parameters": []}) == 201
    assert _post(adding, "/api/admin/projects/default/features", {"name": "f"}) == 201
    deleted = _DuringTheCheck(
        monkeypatch, lambda: deleting.delete("/api/admin/strategies/gate").status_code
    )

    added = _post(adding, STRATEGIES, {"name": "gate"})

    assert (added, deleted.join()) == (200, 409)
    assert StrategyDefinition.objects.filter(pk="gate").exists()
    assert FeatureStrategy.objects.filter(name="gate").count() == 1


@postgresql_only
@concurrent_db
def test_delete_context_field__while_a_constraint_on_it_is_added__never_both(monkeypatch):
    adding, deleting = _clients()[:2]
    ContextFieldFactory(name="tier", legal_values=[{"value": "gold"}])
    assert _post(adding, "/api/admin/projects/default/features", {"name": "f"}) == 201
    deleted = _DuringTheCheck(
        monkeypatch, lambda: deleting.delete("/api/admin/context/tier").status_code
    )
    constraint = {"contextName": "tier", "operator": "IN", "values": ["gold"]}

    added = _post(adding, STRATEGIES, {"name": "default", "constraints": [constraint]})

    assert (added, deleted.join()) == (200, 409)
    assert ContextField.objects.filter(pk="tier").exists()


@postgresql_only
@concurrent_db
def test_delete_legal_value__while_a_constraint_on_it_is_added__waits_for_it(monkeypatch):
    """A legal value removed while a strategy that uses it is added: the removal waits for the
    add (which saw the value legal), so the constraint is written before the value goes, as if
    one after the other (Unleash keeps constraints on a removed legal value)."""
    adding, deleting = _clients()[:2]
    ContextFieldFactory(name="tier", legal_values=[{"value": "gold"}, {"value": "silver"}])
    assert _post(adding, "/api/admin/projects/default/features", {"name": "f"}) == 201
    url = "/api/admin/context/tier/legal-values/gold"
    deleted = _DuringTheCheck(monkeypatch, lambda: deleting.delete(url).status_code)
    constraint = {"contextName": "tier", "operator": "IN", "values": ["gold"]}

    added = _post(adding, STRATEGIES, {"name": "default", "constraints": [constraint]})

    assert (added, deleted.join()) == (200, 200)
    events = AuditEvent.objects.filter(
        type__in=["feature-strategy-add", "context-field-updated"]
    ).order_by("id")
    assert [event.type for event in events] == ["feature-strategy-add", "context-field-updated"]


@postgresql_only
@concurrent_db
def test_delete_strategy_type__and_add_at_once__one_of_them_refused():
    adding, deleting = _clients()[:2]
    assert _post(adding, "/api/admin/strategies", {"name": "gate", "parameters": []}) == 201
    assert _post(adding, "/api/admin/projects/default/features", {"name": "f"}) == 201
    writes = [
        lambda: _post(adding, STRATEGIES, {"name": "gate"}),
        lambda: deleting.delete("/api/admin/strategies/gate").status_code,
    ]

    added, deleted = run_together(2, lambda i: writes[i]())

    assert (added, deleted) in [(200, 409), (400, 200)]
    kept = StrategyDefinition.objects.filter(pk="gate").exists()
    assert FeatureStrategy.objects.filter(name="gate").count() == int(kept)
