"""Writing audit events. Call inside the transaction of the change the event describes."""

from __future__ import annotations

from typing import Any

from flagadmin.api.principals import audit_actor
from flagadmin.models import AuditEvent


def record_event(
    event_type: str,
    *,
    actor: object,
    data: Any = None,
    pre_data: Any = None,
    project: str | None = None,
    feature_name: str | None = None,
    environment: str | None = None,
    tags: list[dict[str, str]] | None = None,
) -> AuditEvent | None:
    """Store one event for `actor` (a user or token principal). An update whose data equals its
    pre-data changed nothing and is not recorded (as Unleash); returns None then."""
    if data is not None and pre_data is not None and data == pre_data:
        return None
    name, user_id, token = audit_actor(actor)
    return AuditEvent.objects.create(
        type=event_type,
        created_by=name,
        created_by_user_id=user_id,
        token=token,
        project=project,
        feature_name=feature_name,
        environment=environment,
        data=data,
        pre_data=pre_data,
        tags=tags or [],
    )
