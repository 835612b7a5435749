"""The segment endpoints, answered as Unleash 8.2's segment controller answers them."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from features.models import Segment
from features.schema import SpecNamedAutoSchema
from features.segment_serializers import (
    AdminSegmentSchemaSerializer,
    SegmentNameSchemaSerializer,
    SegmentsSchemaSerializer,
    SegmentStrategiesSchemaSerializer,
    SegmentStrategySchemaSerializer,
    UpdateFeatureStrategySegmentsSchemaSerializer,
    UpsertSegmentSchemaSerializer,
)
from features.segment_services import (
    check_name_free,
    create_segment,
    delete_segment,
    not_found,
    segments_with_usage,
    strategies_using,
    update_segment,
)
from features.segment_strategy_services import find_strategy, set_strategy_segments
from flagadmin.api.errors import NoAccessError
from flagadmin.api.lookups import id_from_path
from flagadmin.api.responses import serialize
from flagadmin.api.schema import ErrorSerializer, error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms

SEGMENT_ID = OpenApiParameter("id", int, OpenApiParameter.PATH, description="A segment id.")
STRATEGY_ID = OpenApiParameter(
    "strategyId", str, OpenApiParameter.PATH, description="A strategy id."
)
NO_BODY = OpenApiResponse(description="This response has no body.")
IN_USE = OpenApiResponse(
    response=ErrorSerializer,
    description="The name is taken (NameExistsError), or, on delete, strategies of active "
    "flags use the segment (SegmentInUseError).",
)


def _segment_id(raw_id: str) -> int:
    """The id in the path; 404 naming what was sent when it is no segment id at all."""
    segment_id = id_from_path(raw_id)
    if segment_id is None:
        raise not_found(raw_id)
    return segment_id


def get_segment_or_404(raw_id: str) -> Segment:
    segment_id = id_from_path(raw_id)
    segment = Segment.objects.filter(pk=segment_id).first() if segment_id else None
    if segment is None:
        raise not_found(raw_id)
    return segment


class SegmentViewSet(AdminApiMixin, viewsets.ViewSet):
    """Segments: named lists of constraints that strategies use by id. SDKs get a segment's
    constraints inlined into each strategy that uses it, so a change to a segment changes
    what they decide at once."""

    schema = SpecNamedAutoSchema()
    required_permissions = {
        "list": perms.NONE,
        "retrieve": perms.NONE,
        "strategies": perms.NONE,
        "by_strategy": perms.NONE,
        "validate": perms.NONE,
        # UPDATE_FEATURE in the project the body names, checked once the body is read.
        "update_strategy_segments": perms.NONE,
        "create": perms.CREATE_SEGMENT,
        "update": perms.UPDATE_SEGMENT,
        "destroy": perms.DELETE_SEGMENT,
    }

    @extend_schema(
        operation_id="getSegments",
        tags=["Segments"],
        summary="Get all segments",
        description=(
            "Every segment, by name, each with how many flags and projects use it "
            "(`usedInFeatures`, `usedInProjects`; archived flags are not counted)."
        ),
        responses={200: SegmentsSchemaSerializer, **error_responses()},
    )
    def list(self, request: Request) -> Response:
        return Response(
            {"segments": serialize(segments_with_usage(), AdminSegmentSchemaSerializer)}
        )

    @extend_schema(
        operation_id="createSegment",
        tags=["Segments"],
        summary="Create a new segment",
        description=(
            "Creates a segment (`segment-created`). 400 `ExceedsLimitError` past the limit of "
            "segments (`UNLEASH_SEGMENTS_LIMIT`, 300), 400 past the limit of values in all "
            "(`UNLEASH_SEGMENT_VALUES_LIMIT`, 1000) or for a project that does not exist, 409 "
            "`NameExistsError` for a name taken. Needs `CREATE_SEGMENT`. 201 with the segment "
            "and `Location: /api/admin/segments/<id>`."
        ),
        request=UpsertSegmentSchemaSerializer,
        responses={201: AdminSegmentSchemaSerializer, **error_responses(400, 409, 413, 415)},
    )
    def create(self, request: Request) -> Response:
        body = UpsertSegmentSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        fields = dict(body.validated_data)
        fields.pop("keep_description")
        segment = create_segment(**fields, actor=request.user)
        return Response(
            serialize(segment, AdminSegmentSchemaSerializer),
            status=status.HTTP_201_CREATED,
            headers={"Location": f"/api/admin/segments/{segment.pk}"},
        )

    @extend_schema(
        operation_id="getSegment",
        tags=["Segments"],
        summary="Get a segment",
        description="Retrieves a segment based on its ID.",
        parameters=[SEGMENT_ID],
        responses={200: AdminSegmentSchemaSerializer, **error_responses(404)},
    )
    def retrieve(self, request: Request, id: str) -> Response:
        return Response(serialize(get_segment_or_404(id), AdminSegmentSchemaSerializer))

    @extend_schema(
        operation_id="updateSegment",
        tags=["Segments"],
        summary="Update segment by id",
        description=(
            "Replaces the segment's name, project and constraints (a `project` left out: "
            "none); a `description` left out stays as it is (`segment-updated`). 400 when "
            "strategies of another project use it and `project` is set, 404 when there is no "
            "such segment, 409 `NameExistsError` for a name taken. Needs `UPDATE_SEGMENT`. "
            "204, no body."
        ),
        parameters=[SEGMENT_ID],
        request=UpsertSegmentSchemaSerializer,
        responses={204: NO_BODY, **error_responses(400, 404, 409, 413, 415)},
    )
    def update(self, request: Request, id: str) -> Response:
        body = UpsertSegmentSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        update_segment(segment_id=_segment_id(id), **body.validated_data, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="removeSegment",
        tags=["Segments"],
        summary="Deletes a segment by id",
        description=(
            "Deletes the segment (`segment-deleted`). 409 while strategies of active flags use "
            "it (archived flags' strategies lose it, as in Unleash); 404 when there is no such "
            "segment. Needs `DELETE_SEGMENT`. 204, no body."
        ),
        parameters=[SEGMENT_ID],
        request=None,
        responses={204: NO_BODY, **error_responses(404), 409: IN_USE},
    )
    def destroy(self, request: Request, id: str) -> Response:
        delete_segment(segment_id=_segment_id(id), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="getStrategiesBySegmentId",
        tags=["Segments"],
        summary="Get strategies that reference segment",
        description=(
            "The strategies of active flags that use the segment; `changeRequestStrategies` "
            "is always empty (there are no change requests). 404 when there is no such segment."
        ),
        parameters=[SEGMENT_ID],
        responses={200: SegmentStrategiesSchemaSerializer, **error_responses(404)},
    )
    def strategies(self, request: Request, id: str) -> Response:
        segment = get_segment_or_404(id)
        strategies = serialize(strategies_using(segment), SegmentStrategySchemaSerializer)
        return Response({"strategies": strategies, "changeRequestStrategies": []})

    @extend_schema(
        operation_id="getSegmentsByStrategyId",
        tags=["Segments"],
        summary="Get strategy segments",
        description=(
            "The segments the strategy uses; an empty list when there is no such strategy."
        ),
        parameters=[STRATEGY_ID],
        responses={200: SegmentsSchemaSerializer, **error_responses()},
    )
    def by_strategy(self, request: Request, strategyId: str) -> Response:
        segments = Segment.objects.filter(strategy_links__strategy_id=_uuid_or_none(strategyId))
        return Response({"segments": serialize(segments, AdminSegmentSchemaSerializer)})

    @extend_schema(
        operation_id="validateSegment",
        tags=["Segments"],
        summary="Validates if a segment name exists",
        description="204 when the name is free, 409 `NameExistsError` when a segment has it.",
        request=SegmentNameSchemaSerializer,
        responses={204: NO_BODY, **error_responses(400, 409, 413, 415)},
    )
    def validate(self, request: Request) -> Response:
        body = SegmentNameSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        check_name_free(body.validated_data["name"])
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        operation_id="updateFeatureStrategySegments",
        tags=["Strategies"],
        summary="Update strategy segments",
        description=(
            "Makes the strategy use exactly the segments listed (the ones it used and that are "
            "not listed are taken off it) and records `feature-strategy-update` with the "
            "strategy before and after (Unleash 8.2 records nothing, so SDKs do not see the "
            "change until another one). Needs `UPDATE_FEATURE` in `projectId` (403 otherwise). "
            "404 when the strategy is not one of an active flag of that project in that "
            "environment, 400 for a segment that does not exist or belongs to another project "
            "(Unleash answers 500, or links a strategy of any project), or more segments than "
            "the limit (`UNLEASH_STRATEGY_SEGMENTS_LIMIT`, 5). 201 with the body and "
            "`Location: /api/admin/segments/strategies/<strategyId>` (its segments)."
        ),
        request=UpdateFeatureStrategySegmentsSchemaSerializer,
        responses={
            201: UpdateFeatureStrategySegmentsSchemaSerializer,
            **error_responses(400, 404, 413, 415),
        },
    )
    def update_strategy_segments(self, request: Request) -> Response:
        body = UpdateFeatureStrategySegmentsSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if not request.user.has_permission(perms.UPDATE_FEATURE, project_id=data["projectId"]):
            raise NoAccessError(perms.UPDATE_FEATURE)
        strategy = find_strategy(
            project_id=data["projectId"],
            environment=data["environmentId"],
            strategy_id=data["strategyId"],
        )
        set_strategy_segments(strategy=strategy, segment_ids=data["segmentIds"], actor=request.user)
        return Response(
            data,
            status=status.HTTP_201_CREATED,
            headers={"Location": f"/api/admin/segments/strategies/{strategy.pk}"},
        )


def _uuid_or_none(raw: str) -> str | None:
    try:
        return str(uuid.UUID(raw))
    except ValueError:
        return None
