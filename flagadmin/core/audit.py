"""Writing audit events. Call inside the transaction of the change the event describes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from flagadmin.core.actors import Actor, audit_identity
from flagadmin.core.models import AuditEvent


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


# --- reading events: what changed ----------------------------------------------------------

_MISSING = object()


@dataclass(frozen=True)
class DiffRow:
    """One key of an event's data beside its pre-data: `path` from the root (`a.b[0].c`),
    `status` one of added, removed, changed, unchanged; `before` and `after` as JSON text
    (None where the key is absent on that side)."""

    path: str
    status: str
    before: str | None
    after: str | None


def diff_event_data(pre_data: Any, data: Any) -> list[DiffRow]:
    """An event's pre-data and data side by side, key by key. Objects are walked to their
    leaves, so a change deep in a strategy is one row; lists of objects (strategies, variants)
    are compared item by item, object keys in sorted order; lists of plain values (ids,
    permissions, values) and other values are compared whole. A created event's keys are all
    added, a deleted one's all removed."""
    rows: list[DiffRow] = []
    if pre_data is None and data is None:
        return rows
    _diff(
        "",
        _MISSING if pre_data is None else pre_data,
        _MISSING if data is None else data,
        rows,
    )
    return rows


def _as_json(value: Any) -> str | None:
    if value is _MISSING:
        return None
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _walks(value: Any) -> bool:
    """Whether a value is compared by its parts rather than whole."""
    if isinstance(value, dict):
        return bool(value)
    if isinstance(value, list):
        return any(isinstance(item, dict | list) for item in value)
    return False


def _diff(path: str, before: Any, after: Any, rows: list[DiffRow]) -> None:
    if before is not _MISSING and after is not _MISSING and type(before) is not type(after):
        rows.append(DiffRow(path or "(value)", "changed", _as_json(before), _as_json(after)))
        return
    side = after if after is not _MISSING else before
    if not (_walks(before) or _walks(after)):
        if before is _MISSING:
            status = "added"
        elif after is _MISSING:
            status = "removed"
        else:
            status = "unchanged" if before == after else "changed"
        rows.append(DiffRow(path or "(value)", status, _as_json(before), _as_json(after)))
        return
    if isinstance(side, dict):
        old = before if isinstance(before, dict) else {}
        new = after if isinstance(after, dict) else {}
        # In key order: PostgreSQL's jsonb keeps no order of its own to show.
        keys = sorted({*old, *new}, key=str)
        for key in keys:
            child = f"{path}.{key}" if path else str(key)
            _diff(
                child,
                old.get(key, _MISSING) if before is not _MISSING else _MISSING,
                new.get(key, _MISSING) if after is not _MISSING else _MISSING,
                rows,
            )
        return
    old_items = before if isinstance(before, list) else []
    new_items = after if isinstance(after, list) else []
    for index in range(max(len(old_items), len(new_items))):
        _diff(
            f"{path}[{index}]",
            old_items[index] if index < len(old_items) else _MISSING,
            new_items[index] if index < len(new_items) else _MISSING,
            rows,
        )


# --- reading events: what they are about --------------------------------------------------

# Event types about one group or one token (the admin's target filters read these through the
# type index, then the name in the event's data).
GROUP_EVENT_TYPES = (
    "group-created",
    "group-updated",
    "group-deleted",
    "group-user-added",
    "group-user-removed",
)
TOKEN_EVENT_TYPES = ("api-token-created", "api-token-updated", "api-token-deleted")

# Event types by prefix (longest first): the kind of thing they are about and the keys of their
# data that name it.
_TARGET_KINDS = (
    ("api-token-", "token", ("tokenName", "name")),
    ("group-user-", "group", ("groupId",)),
    ("group-", "group", ("name",)),
    ("user-", "user", ("email", "username", "name")),
    ("role-", "role", ("name",)),
    ("segment-", "segment", ("name",)),
    ("tag-type-", "tag type", ("name",)),
    ("tag-", "tag", ("value",)),
    ("environment-", "environment", ("name",)),
    ("context-field-", "context field", ("name",)),
    ("strategy-", "strategy", ("name",)),
    ("project-", "project", ("id", "name")),
    ("pat-", "token", ("description",)),
)


@dataclass(frozen=True)
class EventTarget:
    """What an event is about: a kind (flag, project, group, token, user, role, ...) and the
    name (or id, where the event records no name) of the one it is about."""

    kind: str
    name: str


def event_target(event: AuditEvent) -> EventTarget | None:
    """What the event is about, from its own columns and data (no query): its flag, else the
    thing its type names (a group, a token, a user, ...), else its project."""
    if event.feature_name:
        return EventTarget("flag", event.feature_name)
    for prefix, kind, keys in _TARGET_KINDS:
        if event.type.startswith(prefix):
            name = _first_value(keys, event.data, event.pre_data)
            if name is not None:
                if kind == "group" and keys == ("groupId",):
                    return EventTarget("group", f"#{name}")
                return EventTarget(kind, str(name))
            break
    if event.project:
        return EventTarget("project", event.project)
    return None


def _first_value(keys: tuple[str, ...], *documents: Any) -> Any:
    for document in documents:
        if isinstance(document, dict):
            for key in keys:
                value = document.get(key)
                if value not in (None, ""):
                    return value
    return None
