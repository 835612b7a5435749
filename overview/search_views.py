"""GET /api/admin/search/features (Unleash's searchFeatures): a read over flags of every
project, so above `features` and `projects` ([docs/search.md](../docs/search.md))."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from drf_spectacular.utils import (
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from features.models import Feature, LifecycleStage
from features.serializers import CreatedBySchemaSerializer
from flagadmin.api.responses import Attrs, ResponseShape, serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.search import (
    DATE_RANGE_PATTERN,
    INCLUDE_PATTERN,
    INDEX_SCANS,
    IS_PATTERN,
    TAG_PATTERN,
    DayFilterField,
    Filter,
    FilterField,
    PageQuerySerializer,
    parse_query,
    search_terms,
    whole_numbers,
)
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from flagadmin.core.db import read_snapshot
from overview.feature_search import (
    SORT_FIELDS,
    STATES,
    FeatureSearch,
    page_details,
    search_features,
)

STAGES = tuple(LifecycleStage.values)
FAVORITE_PATTERN = r"^(IS|IS_ANY_OF):(true|false)(,(true|false))*$"


def _allowed(values: tuple[str, ...]) -> str:
    return ", ".join(f'"{value}"' for value in values)


def _only(found: Filter | None, allowed: tuple[str, ...]) -> Filter | None:
    if found is not None and not set(found.values) <= set(allowed):
        raise serializers.ValidationError(f"must name only {_allowed(allowed)}")
    return found


class SearchFeaturesQuerySerializer(PageQuerySerializer):
    query = serializers.CharField(
        required=False,
        allow_blank=True,
        trim_whitespace=False,
        help_text="Comma-separated terms; flags whose name or description contains any of them "
        "(case-insensitively).",
    )
    project = FilterField(IS_PATTERN, help_text="e.g. `IS:default`, `IS_ANY_OF:a,b`.")
    type = FilterField(IS_PATTERN, help_text="e.g. `IS:release`.")
    createdBy = FilterField(IS_PATTERN, help_text="User ids, e.g. `IS:1`.")
    tag = FilterField(TAG_PATTERN, help_text="e.g. `INCLUDE:simple:my_tag`.")
    segment = FilterField(INCLUDE_PATTERN, help_text="Segment names, e.g. `INCLUDE:pro-users`.")
    state = FilterField(
        IS_PATTERN, help_text=f"Among {_allowed(STATES)}, e.g. `IS:potentially-stale`."
    )
    lifecycle = FilterField(IS_PATTERN, help_text=f"Among {_allowed(STAGES)}.")
    createdAt = DayFilterField(DATE_RANGE_PATTERN, help_text="e.g. `IS_ON_OR_AFTER:2023-01-28`.")
    lastSeenAt = DayFilterField(
        DATE_RANGE_PATTERN,
        help_text="When an SDK last reported the flag, e.g. `IS_BEFORE:2023-01-28`.",
    )
    favorite = FilterField(
        FAVORITE_PATTERN, help_text="`IS:true`: the caller's favorites; `IS:false`: the others."
    )
    status = serializers.ListField(
        child=serializers.RegexField(
            r"^[^:]+:(enabled|disabled)$",
            error_messages={"invalid": "must be `<environment>:enabled` or `:disabled`"},
        ),
        required=False,
        help_text="Flags on (`production:enabled`) or off in any of the environments named.",
    )
    archived = serializers.RegexField(
        r"^IS:(true|false)$",
        required=False,
        error_messages={"invalid": 'must match pattern "^IS:(true|false)$"'},
        help_text="`IS:true`: archived flags only; else active ones.",
    )
    favoritesFirst = serializers.ChoiceField(
        ["true", "false"],
        required=False,
        error_messages={"invalid_choice": 'must be equal to one of "true", "false"'},
    )
    sortBy = serializers.CharField(
        required=False,
        help_text=f"One of {_allowed(SORT_FIELDS)} or `environment:<name>` (default createdAt).",
    )
    sortOrder = serializers.ChoiceField(
        ["asc", "desc"],
        required=False,
        error_messages={
            "invalid_choice": 'must be equal to one of the allowed values: "asc", "desc"'
        },
    )

    def validate_createdBy(self, value: Filter | None) -> Filter | None:
        return whole_numbers(value, "user ids")

    def validate_tag(self, value: Filter | None) -> Filter | None:
        # Unleash's pattern lets `INCLUDE:a:b,c` through, then fails in the database on `c`.
        if value is not None and not all(
            type_.strip() and tag.strip()
            for type_, _, tag in (part.partition(":") for part in value.values)
        ):
            raise serializers.ValidationError("must name each tag as `type:value`")
        return value

    def validate_state(self, value: Filter | None) -> Filter | None:
        return _only(value, STATES)

    def validate_lifecycle(self, value: Filter | None) -> Filter | None:
        return _only(value, STAGES)

    def validate_sortBy(self, value: str) -> str:
        if value in SORT_FIELDS or (value.startswith("environment:") and len(value) > 12):
            return value
        raise serializers.ValidationError(
            f"must be one of {_allowed(SORT_FIELDS)} or `environment:<name>`"
        )


@extend_schema_serializer(component_name="featureSearchEnvironmentSchema")
class FeatureSearchEnvironmentSchemaSerializer(serializers.Serializer):
    name = serializers.CharField()
    enabled = serializers.BooleanField()
    type = serializers.CharField()
    sortOrder = serializers.IntegerField()
    variantCount = serializers.IntegerField()
    lastSeenAt = serializers.DateTimeField(allow_null=True)
    hasStrategies = serializers.BooleanField()
    hasEnabledStrategies = serializers.BooleanField()
    yes = serializers.IntegerField(help_text="Evaluations to on reported in the last hour.")
    no = serializers.IntegerField(help_text="Evaluations to off reported in the last hour.")
    changeRequestIds = serializers.ListField(
        child=serializers.IntegerField(), help_text="Change requests are not built: always []."
    )


@extend_schema_serializer(component_name="featureSearchTagSchema")
class FeatureSearchTagSchemaSerializer(serializers.Serializer):
    value = serializers.CharField()
    type = serializers.CharField()
    color = serializers.CharField(allow_null=True)


@extend_schema_serializer(component_name="featureSearchLifecycleSchema")
class FeatureSearchLifecycleSchemaSerializer(serializers.Serializer):
    stage = serializers.ChoiceField(choices=STAGES)
    enteredStageAt = serializers.DateTimeField()


@extend_schema_serializer(component_name="featureSearchResponseSchema")
class FeatureSearchResponseSchemaSerializer(ResponseShape):
    type = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    project = serializers.CharField(source="project_id")
    favorite = serializers.BooleanField(source="is_favorite")
    name = serializers.CharField()
    createdAt = serializers.DateTimeField(source="created_at")
    stale = serializers.BooleanField()
    archivedAt = serializers.DateTimeField(source="archived_at", allow_null=True)
    impressionData = serializers.BooleanField(source="impression_data")
    dependencyType = serializers.ChoiceField(
        ["parent", "child"], source="dependency_type", allow_null=True
    )
    environments = FeatureSearchEnvironmentSchemaSerializer(source="page_environments", many=True)
    segments = serializers.ListField(
        child=serializers.CharField(), source="page_segments", help_text="By name."
    )
    createdBy = CreatedBySchemaSerializer(
        source="created_by", allow_null=True, help_text="Null once deleted."
    )
    # Given by `get_attrs` only when the flag has them: a missing attribute leaves the key out.
    lifecycle = FeatureSearchLifecycleSchemaSerializer(
        source="page_lifecycle",
        required=False,
        help_text="Absent for a flag that never entered a stage.",
    )
    tags = FeatureSearchTagSchemaSerializer(
        source="page_tags",
        many=True,
        required=False,
        help_text="Absent when the flag has none, as in Unleash.",
    )

    def get_attrs(self, items: Sequence[Feature]) -> Mapping[Feature, Attrs]:
        # A fixed number of statements for the page, each bounded by its flags' names.
        details = page_details([flag.name for flag in items])
        attrs: dict[Feature, dict[str, Any]] = {}
        for flag in items:
            name = flag.name
            found = attrs[flag] = {
                "dependency_type": (
                    "parent"
                    if name in details.parents
                    else "child"
                    if name in details.children
                    else None
                ),
                "page_environments": details.environments.get(name, []),
                "page_segments": details.segments.get(name, []),
            }
            if (stage := details.stages.get(name)) is not None:
                found["page_lifecycle"] = {"stage": stage.stage, "enteredStageAt": stage.entered_at}
            if name in details.tags:
                found["page_tags"] = details.tags[name]
        return attrs


@extend_schema_serializer(component_name="searchFeaturesSchema")
class SearchFeaturesSchemaSerializer(serializers.Serializer):
    features = FeatureSearchResponseSchemaSerializer(many=True)
    total = serializers.IntegerField(help_text="Flags matching, all pages.")


def feature_search(data: dict[str, Any]) -> FeatureSearch:
    """The search that validated query parameters ask for."""
    return FeatureSearch(
        terms=search_terms(data.get("query")),
        project=data.get("project"),
        type=data.get("type"),
        created_by=data.get("createdBy"),
        tag=data.get("tag"),
        segment=data.get("segment"),
        state=data.get("state"),
        lifecycle=data.get("lifecycle"),
        created_at=data.get("createdAt"),
        last_seen_at=data.get("lastSeenAt"),
        favorite=data.get("favorite"),
        status=[
            (value.rsplit(":", 1)[0], value.endswith(":enabled"))
            for value in data.get("status", [])
        ],
        archived=data.get("archived") == "IS:true",
        favorites_first=data.get("favoritesFirst") == "true",
        sort_by=data.get("sortBy", "createdAt"),
        sort_order=data.get("sortOrder", "asc"),
        offset=data["offset"],
        limit=data["limit"],
    )


class FeatureSearchView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        tags=["Search"],
        operation_id="searchFeatures",
        summary="Search and filter features",
        description="Flags of every project matching every filter given, sorted (by creation "
        "time unless `sortBy` says otherwise, then oldest first, then by name) and paged, with "
        "the number that match. Filters take Unleash's `OPERATOR:value,value` form. Where "
        "Unleash reads a bad `offset`, `limit`, `sortBy`, `state` or `status` as its default, "
        "this is a 400 naming it. Any admin-API principal may search.",
        parameters=[SearchFeaturesQuerySerializer],
        responses={200: OpenApiResponse(SearchFeaturesSchemaSerializer), **error_responses(400)},
    )
    def get(self, request: Request) -> Response:
        data = parse_query(request.query_params, SearchFeaturesQuerySerializer)
        with read_snapshot(local_settings=INDEX_SCANS):  # the total, the page and its details
            page, total = search_features(feature_search(data), user=request.user)
            features = serialize(page, FeatureSearchResponseSchemaSerializer)
        return Response({"features": features, "total": total})
