"""One audit mechanism for every write the Django admin makes.

Every app's ModelAdmin derives from `AuditedModelAdmin` (or mixes in `AuditedAdminMixin`). The
admin itself calls `log_addition`, `log_change` and `log_deletions` after a save or before a
delete, inside the transaction of the add, change and delete views; actions are made atomic
here. Those three hooks write the audit event with the signed-in user as actor, so the event
commits or rolls back with the change. An admin names its events after Unleash's
(`<audit_type>-created`, `-updated`, `-deleted`, or other verbs) and says what the event
records (`audit_data`: by default the model's own fields; inline rows when the snapshot reads
them, since it is taken before the form is saved and again after its inlines are).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.contrib import admin
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models, router, transaction
from django.http import HttpRequest, HttpResponse

from flagadmin.core.audit import record_event
from flagadmin.core.locks import members_write
from flagadmin.core.times import api_timestamp

_BEFORE = "_audit_snapshots_before"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class _EventEncoder(DjangoJSONEncoder):
    """Django's encoder, but datetimes as every other event writes them (`api_timestamp`)."""

    def default(self, o: Any) -> Any:
        if isinstance(o, datetime):
            return api_timestamp(o)
        return super().default(o)


def json_safe(value: Any) -> Any:
    """Dates, UUIDs and decimals as JSON has them (the audit columns are JSON)."""
    return json.loads(json.dumps(value, cls=_EventEncoder))


def model_fields_snapshot(obj: models.Model, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """The model's concrete fields in camelCase (foreign keys as their ids)."""
    return json_safe(
        {
            _camel(field.name): getattr(obj, field.attname)
            for field in obj._meta.concrete_fields
            if field.name not in exclude
        }
    )


def _snapshots(request: HttpRequest) -> dict[tuple[str, str], Any]:
    if not hasattr(request, _BEFORE):
        setattr(request, _BEFORE, {})
    return getattr(request, _BEFORE)


def _key(obj: models.Model) -> tuple[str, str]:
    return obj._meta.label, str(obj.pk)


class AuditedAdminMixin:
    """Writes an audit event for each add, change and delete the admin makes (see the module)."""

    # Events are f"{audit_type}-{verb}"; empty: this admin records its own events.
    audit_type: str = ""
    audit_verbs: tuple[str, str, str] = ("created", "updated", "deleted")
    # Fields left out of the default snapshot (secrets, digests, counters).
    audit_exclude: tuple[str, ...] = ()

    def audit_data(self, obj: models.Model) -> dict[str, Any]:
        """What the event records about `obj` (its data, or pre-data when deleted)."""
        return model_fields_snapshot(obj, self.audit_exclude)

    def audit_scope(self, obj: models.Model) -> dict[str, Any]:
        """The event's project, feature_name and environment, where the object has them."""
        return {}

    def audit_added(self, request: HttpRequest, obj: models.Model) -> None:
        if self.audit_type:
            record_event(
                f"{self.audit_type}-{self.audit_verbs[0]}",
                actor=request.user,
                data=self.audit_data(obj),
                **self.audit_scope(obj),
            )

    def audit_changed(self, request: HttpRequest, obj: models.Model, before: Any) -> None:
        # record_event drops an update whose data equals its pre-data (nothing changed).
        if self.audit_type:
            record_event(
                f"{self.audit_type}-{self.audit_verbs[1]}",
                actor=request.user,
                data=self.audit_data(obj),
                pre_data=before,
                **self.audit_scope(obj),
            )

    def audit_deleted(self, request: HttpRequest, obj: models.Model, before: Any) -> None:
        if self.audit_type:
            record_event(
                f"{self.audit_type}-{self.audit_verbs[2]}",
                actor=request.user,
                pre_data=before,
                **self.audit_scope(obj),
            )

    # --- the admin's own hooks ------------------------------------------------------------

    def get_object(self, request: HttpRequest, object_id: str, from_field: str | None = None):
        obj = super().get_object(request, object_id, from_field)
        # A POST is about to change or delete it: keep what it was, before the form binds.
        if obj is not None and request.method == "POST":
            _snapshots(request)[_key(obj)] = self.audit_data(obj)
        return obj

    def log_addition(self, request: HttpRequest, obj: models.Model, message: Any):
        entry = super().log_addition(request, obj, message)
        self.audit_added(request, obj)
        return entry

    def log_change(self, request: HttpRequest, obj: models.Model, message: Any):
        entry = super().log_change(request, obj, message)
        before = _snapshots(request).pop(_key(obj), None)
        self.audit_changed(request, obj, before)
        return entry

    # Admins whose writes change members (group memberships, project roles, role types) or
    # delete what members refer to (groups, people, projects, roles): every write of theirs
    # is a write of members (`flagadmin.core.locks.members_write`), its lock taken before any
    # row lock. A delete then locks its rows FOR UPDATE and snapshots them for the audit
    # event, so the event holds what a writer it waited for added.
    changes_members = False

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any):
        if self.changes_members and request.method == "POST":
            with members_write():
                return super().changeform_view(request, *args, **kwargs)
        return super().changeform_view(request, *args, **kwargs)

    def delete_view(self, request: HttpRequest, *args: Any, **kwargs: Any):
        if self.changes_members and request.method == "POST":
            with members_write():
                return super().delete_view(request, *args, **kwargs)
        return super().delete_view(request, *args, **kwargs)

    def log_deletions(self, request: HttpRequest, queryset):
        # Called before the rows go (delete view and "Delete selected" alike).
        objects = list(queryset)
        if self.changes_members:
            keys = [obj.pk for obj in objects]
            with members_write() as members:
                members.lock_for_delete(self.model, keys)
            # What they are once locked: the snapshots before may miss what a writer added.
            objects = list(self.model._base_manager.filter(pk__in=keys).order_by("pk"))
            for obj in objects:
                _snapshots(request).pop(_key(obj), None)
            request._deleting_keys = [obj.pk for obj in objects]  # type: ignore[attr-defined]
        for obj in objects:
            before = _snapshots(request).pop(_key(obj), None)
            self.audit_deleted(request, obj, before if before is not None else self.audit_data(obj))
        return super().log_deletions(request, objects)

    def delete_queryset(self, request: HttpRequest, queryset) -> None:
        # The rows locked and logged, not the list's filter again (an annotation filter such as
        # "no members" may no longer match a row that a writer changed meanwhile).
        keys = getattr(request, "_deleting_keys", None)
        if self.changes_members and keys is not None:
            queryset = self.model._base_manager.filter(pk__in=keys)
        super().delete_queryset(request, queryset)

    def response_action(self, request: HttpRequest, queryset) -> HttpResponse | None:
        # Actions write rows and their events together, or neither.
        if self.changes_members:
            with members_write():
                return super().response_action(request, queryset)
        with transaction.atomic(using=router.db_for_write(self.model)):
            return super().response_action(request, queryset)


class AuditedModelAdmin(AuditedAdminMixin, admin.ModelAdmin):
    pass
