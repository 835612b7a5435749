"""Writing audit events. Call inside the transaction of the change the event describes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rest_framework.fields import DateTimeField

from flagadmin.core.actors import Actor, audit_identity
from flagadmin.core.models import AuditEvent

_DATETIME = DateTimeField()


def event_time(value: datetime | None) -> str | None:
    """A moment as event data records it: exactly as the API writes datetimes (DRF's ISO 8601
    in UTC with `Z`, microseconds when there are any: `2024-03-01T12:30:15.250000Z`), so a
    value in an event compares equal to the same value in a response. None stays None."""
    return _DATETIME.to_representation(value)


def build_event(
    event_type: str,
    *,
    actor: Actor,
    data: Any = None,
    pre_data: Any = None,
    project: str | None = None,
    feature_name: str | None = None,
    environment: str | None = None,
    tags: list[dict[str, str]] | None = None,
) -> AuditEvent | None:
    """The event `record_event` stores, unsaved, for a caller that writes it in one statement
    with the rows it describes (the busiest writes). None for a no-op update."""
    if data is not None and pre_data is not None and data == pre_data:
        return None
    identity = audit_identity(actor)
    return AuditEvent(
        type=event_type,
        created_by=identity.name,
        created_by_user_id=identity.user_id,
        token=identity.token,
        project=project,
        feature_name=feature_name,
        environment=environment,
        data=data,
        pre_data=pre_data,
        tags=tags or [],
    )


def record_event(event_type: str, **fields: Any) -> AuditEvent | None:
    """Store one event (same keywords as `build_event`: actor, data, pre_data, project,
    feature_name, environment, tags). An update whose data equals its pre-data changed
    nothing and is not recorded (as Unleash); returns None then."""
    event = build_event(event_type, **fields)
    if event is not None:
        event.save(force_insert=True)
    return event
