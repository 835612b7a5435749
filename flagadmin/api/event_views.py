"""The event log, as Unleash 8.2's (deprecated but still used) `/api/admin/events` reads it:
newest first (`createdAt`, then `id`), a bounded page and the total it was cut from."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from flagadmin.api.responses import ResponseShape, serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.search import INDEX_SCANS
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from flagadmin.core.db import read_snapshot
from flagadmin.core.models import AuditEvent

# Unleash's pages: its `getEvents` reads the newest 100; its `searchEvents`, used for a
# project's or a flag's events, is called with `limit: 50`. Neither takes an offset here.
LATEST_LIMIT = 100
FILTERED_LIMIT = 50


@extend_schema_serializer(component_name="eventSchema")
class EventSchemaSerializer(ResponseShape):
    id = serializers.IntegerField()
    type = serializers.CharField()
    createdBy = serializers.CharField(source="created_by")
    createdAt = serializers.DateTimeField(source="created_at")
    createdByUserId = serializers.IntegerField(source="created_by_user_id", allow_null=True)
    data = serializers.JSONField(allow_null=True)
    preData = serializers.JSONField(source="pre_data", allow_null=True)
    tags = serializers.JSONField()
    featureName = serializers.CharField(source="feature_name", allow_null=True)
    project = serializers.CharField(allow_null=True)
    environment = serializers.CharField(allow_null=True)


@extend_schema_serializer(component_name="eventsSchema")
class EventsSchemaSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    events = EventSchemaSerializer(many=True)
    totalEvents = serializers.IntegerField(help_text="Events matching the query, all pages.")


@extend_schema_serializer(component_name="featureEventsSchema")
class FeatureEventsSchemaSerializer(EventsSchemaSerializer):
    toggleName = serializers.CharField(help_text="The flag the events are about.")


_FIELDS = [
    "id",
    "type",
    "created_by",
    "created_at",
    "created_by_user_id",
    "data",
    "pre_data",
    "tags",
    "feature_name",
    "project",
    "environment",
]


def event_page(events: QuerySet[AuditEvent], limit: int) -> dict:
    """`{version, events, totalEvents}`: the newest `limit` of `events` and how many there are
    (one select, one count, each served by an index of `AuditEvent`), read as the event
    search reads them: in one snapshot, so that the total and the page agree, and with
    `INDEX_SCANS`, so that counting every event is not a sequential scan of the table."""
    page = events.order_by("-created_at", "-id").only(*_FIELDS)
    with read_snapshot(local_settings=INDEX_SCANS):
        rows = list(page[:limit])
        total = events.count()
    return {
        "version": 1,
        "events": serialize(rows, EventSchemaSerializer),
        "totalEvents": total,
    }


class EventsView(AdminApiMixin, APIView):
    required_permission = perms.ADMIN

    @extend_schema(
        tags=["Events"],
        operation_id="getEvents",
        summary="Get the most recent events from the Unleash instance or all events related "
        "to a project.",
        description="The newest 100 events of the instance; with `project`, the newest 50 of "
        "that project (Unleash answers 50 there too, although its description says all). "
        "`totalEvents` counts every matching event. A project that does not exist has none.",
        deprecated=True,
        parameters=[
            OpenApiParameter(
                "project",
                str,
                description="The name of the project whose events you want to retrieve",
            )
        ],
        responses={200: OpenApiResponse(EventsSchemaSerializer), **error_responses(400)},
    )
    def get(self, request: Request) -> Response:
        project = request.query_params.get("project")
        if project:  # Unleash reads an empty `project` as none given
            return Response(event_page(AuditEvent.objects.filter(project=project), FILTERED_LIMIT))
        return Response(event_page(AuditEvent.objects.all(), LATEST_LIMIT))


class FeatureEventsView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        tags=["Events"],
        operation_id="getEventsForToggle",
        summary="Get all events related to a specific feature flag.",
        description="The newest 50 events about the flag (archived or deleted flags included), "
        "with `totalEvents` counting all of them. A flag that never existed has none.",
        deprecated=True,
        responses={200: OpenApiResponse(FeatureEventsSchemaSerializer), **error_responses()},
    )
    def get(self, request: Request, featureName: str) -> Response:
        events = AuditEvent.objects.filter(feature_name=featureName)
        page = event_page(events, FILTERED_LIMIT)
        return Response({"version": page.pop("version"), "toggleName": featureName, **page})
