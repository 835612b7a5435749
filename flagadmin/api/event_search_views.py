"""GET /api/admin/search/events (Unleash's searchEvents), beside the event log it searches
(`event_views`): newest first, filtered, paged, with the total (docs/search.md)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from django.db.models import F, Func, QuerySet, TextField
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from flagadmin.api.event_views import _FIELDS, EventSchemaSerializer
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.search import (
    DATE_IS_PATTERN,
    INDEX_SCANS,
    POSITIVE_PATTERN,
    DayFilterField,
    Filter,
    FilterField,
    PageQuerySerializer,
    any_term,
    whole_numbers,
)
from flagadmin.api.search import parse_query as parse_search_query
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from flagadmin.core.db import read_snapshot
from flagadmin.core.models import AuditEvent


class EventText(Func):
    """What `query` searches: the event's data, tags and previous data as JSON text, in one
    expression, written exactly as the trigram index of the core's migration 0012 declares it
    on PostgreSQL (`EVENT_TEXT_SQL`), so that the planner uses it."""

    output_field = TextField()

    def __init__(self) -> None:
        super().__init__(F("data"), F("tags"), F("pre_data"))

    def as_sql(self, compiler, connection, **extra_context):
        (data, data_params), (tags, tags_params), (pre, pre_params) = (
            compiler.compile(expression) for expression in self.get_source_expressions()
        )
        cast = "::text" if connection.vendor == "postgresql" else ""
        sql = (
            f"(COALESCE({data}{cast}, '') || ' ' || {tags}{cast} || ' ' || "
            f"COALESCE({pre}{cast}, ''))"
        )
        return sql, [*data_params, *tags_params, *pre_params]


class SearchEventsQuerySerializer(PageQuerySerializer):
    max_limit = 1000

    query = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="Events whose data, tags or previous data contain it (case-insensitively).",
    )
    id = FilterField(POSITIVE_PATTERN, help_text="Event ids, e.g. `IS_ANY_OF:12,13`.")
    feature = FilterField(POSITIVE_PATTERN, help_text="e.g. `IS:my-flag`.")
    project = FilterField(POSITIVE_PATTERN, help_text="e.g. `IS:default`.")
    type = FilterField(POSITIVE_PATTERN, help_text="e.g. `IS:feature-created`.")
    environment = FilterField(POSITIVE_PATTERN, help_text="e.g. `IS:production`.")
    createdBy = FilterField(POSITIVE_PATTERN, help_text="User ids, e.g. `IS:2`.")
    # `from` is a Python keyword: declared below under its wire name.
    to = DayFilterField(DATE_IS_PATTERN, help_text="Up to and including this day (UTC).")

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        fields["from"] = DayFilterField(DATE_IS_PATTERN, help_text="From this day on (UTC).")
        return fields

    def validate_id(self, value: Filter | None) -> Filter | None:
        return whole_numbers(value, "event ids")

    def validate_createdBy(self, value: Filter | None) -> Filter | None:
        return whole_numbers(value, "user ids")


@extend_schema_serializer(component_name="eventSearchResponseSchema")
class EventSearchResponseSchemaSerializer(serializers.Serializer):
    events = EventSchemaSerializer(many=True)
    total = serializers.IntegerField(help_text="Events matching, all pages.")


def _day(found: Filter) -> datetime:
    return datetime.fromisoformat(found.values[0]).replace(tzinfo=UTC)


def matching_events(data: dict[str, Any], *, sees_unscoped: bool) -> QuerySet[AuditEvent]:
    """The events the search matches. Callers without the ADMIN permission see only events
    of a project, as Unleash shows them."""
    events = AuditEvent.objects.all()
    for name, column in (
        ("id", "id"),
        ("feature", "feature_name"),
        ("project", "project"),
        ("type", "type"),
        ("environment", "environment"),
        ("createdBy", "created_by_user_id"),
    ):
        if (found := data.get(name)) is not None:
            events = events.filter(**{f"{column}__in": found.values})
    if (found := data.get("from")) is not None:
        events = events.filter(created_at__gte=_day(found))
    if (found := data.get("to")) is not None and found.values[0] != "9999-12-31":
        events = events.filter(created_at__lt=_day(found) + timedelta(days=1))
    if query := data.get("query"):
        events = events.filter(any_term([EventText()], [query]))
    if not sees_unscoped:
        events = events.filter(project__isnull=False)
    return events


class EventSearchView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        tags=["Events"],
        operation_id="searchEvents",
        summary="Search for events",
        description="Events matching every filter given, newest first (`createdAt`, then "
        "`id`), paged (`limit` 1 to 1000, default 50), with the number that match. Filters take "
        "Unleash's `IS:value` or `IS_ANY_OF:a,b` form; `from` and `to` name days (UTC), `to` "
        "included. Callers without the ADMIN permission see the events of projects only. Where "
        "Unleash reads a bad `offset` or `limit` as its default, this is a 400 naming it.",
        parameters=[SearchEventsQuerySerializer],
        responses={
            200: OpenApiResponse(EventSearchResponseSchemaSerializer),
            **error_responses(400),
        },
    )
    def get(self, request: Request) -> Response:
        data = parse_search_query(request.query_params, SearchEventsQuerySerializer)
        events = matching_events(data, sees_unscoped=request.user.has_permission(perms.ADMIN))
        offset, limit = data["offset"], data["limit"]
        page = events.order_by(F("created_at").desc(), F("id").desc()).only(*_FIELDS)
        with read_snapshot(local_settings=INDEX_SCANS):  # the total and the page agree
            total = events.count()
            rows = list(page[offset : offset + limit]) if offset < total else []
        return Response({"events": serialize(rows, EventSchemaSerializer), "total": total})
