"""The context field and strategy endpoints, answered as Unleash 8.2's context and strategy
controllers answer them (statuses, bodies, messages measured on the reference)."""

from __future__ import annotations

from urllib.parse import quote

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from definitions.models import ContextField, StrategyDefinition
from definitions.serializers import (
    ContextFieldSchemaSerializer,
    ContextFieldStrategiesSchemaSerializer,
    ContextFieldWithUsageSerializer,
    CreateContextFieldSchemaSerializer,
    CreateStrategySchemaSerializer,
    LegalValueSchemaSerializer,
    NameSchemaSerializer,
    StrategiesSchemaSerializer,
    StrategySchemaSerializer,
    UpdateContextFieldSchemaSerializer,
    UpdateStrategySchemaSerializer,
)
from definitions.services import (
    check_context_field_name_free,
    create_context_field,
    create_strategy,
    delete_context_field,
    delete_legal_value,
    delete_strategy,
    set_legal_value,
    set_strategy_deprecated,
    strategy_not_found,
    update_context_field,
    update_strategy,
)
from definitions.usage import context_field_usage
from flagadmin.api.errors import ConflictError, NotFoundError
from flagadmin.api.responses import serialize
from flagadmin.api.schema import ErrorSerializer, error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core.errors import InUseError
from flagadmin.core.names import URL_SAFE_CHARACTERS

CREATE_CONTEXT_FIELD = "CREATE_CONTEXT_FIELD"
UPDATE_CONTEXT_FIELD = "UPDATE_CONTEXT_FIELD"
DELETE_CONTEXT_FIELD = "DELETE_CONTEXT_FIELD"
CREATE_STRATEGY = "CREATE_STRATEGY"
UPDATE_STRATEGY = "UPDATE_STRATEGY"
DELETE_STRATEGY = "DELETE_STRATEGY"
NONE = "NONE"

VERSION = 1
CONTEXT_FIELD = OpenApiParameter(
    "contextField", str, OpenApiParameter.PATH, description="A context field's name."
)
STRATEGY_NAME = OpenApiParameter(
    "name", str, OpenApiParameter.PATH, description="A strategy type's name."
)
STRATEGY_NAME_ACTION = OpenApiParameter(
    "strategyName", str, OpenApiParameter.PATH, description="A strategy type's name."
)
LEGAL_VALUE = OpenApiParameter(
    "legalValue", str, OpenApiParameter.PATH, description="A legal value of the field."
)
NO_BODY = OpenApiResponse(description="This response has no body.")
CONTEXT_FIELD_CONFLICT = OpenApiResponse(
    response=ErrorSerializer,
    description="A strategy of a flag that is not archived has a constraint on the field "
    "(ConflictError).",
)
STRATEGY_IN_USE = OpenApiResponse(
    response=ErrorSerializer,
    description="Strategies of flags, archived ones included, are of this type (ConflictError).",
)
BUILT_IN_REFUSED = OpenApiResponse(
    response=ErrorSerializer,
    description="Valid credentials without the permission (NoAccessError), or a built-in "
    "strategy, which cannot be edited (InvalidOperationError).",
)


def _path(name: str) -> str:
    return quote(name, safe=URL_SAFE_CHARACTERS)


def _no_body() -> Response:
    """200 with no body, as Unleash ends these responses."""
    return Response(status=status.HTTP_200_OK, content_type=None)


class ContextFieldViewSet(AdminApiMixin, viewsets.ViewSet):
    """Context fields: the names constraints and custom stickiness may use, with their legal
    values."""

    required_permissions = {
        "list": NONE,
        "retrieve": NONE,
        "create": CREATE_CONTEXT_FIELD,
        "update": UPDATE_CONTEXT_FIELD,
        "destroy": DELETE_CONTEXT_FIELD,
        "validate": UPDATE_CONTEXT_FIELD,
        "strategies": NONE,
    }

    @extend_schema(
        operation_id="getContextFields",
        tags=["Context"],
        summary="Gets configured context fields",
        description=(
            "Every context field, by name, each with how many projects and flags (not "
            "archived) have a constraint on it."
        ),
        responses={200: ContextFieldWithUsageSerializer(many=True), **error_responses()},
    )
    def list(self, request: Request) -> Response:
        fields = ContextField.objects.order_by("name")
        return Response(serialize(fields, ContextFieldWithUsageSerializer))

    @extend_schema(
        operation_id="createContextField",
        tags=["Context"],
        summary="Create a context field",
        description=(
            "Creates a custom context field (`context-field-created`). 400 for a name that is "
            "not URL-friendly, a description over 250 characters, a legal value given twice or "
            "a `project` (project-specific fields are not supported); 409 `NameExistsError` "
            "for a name taken. Needs `CREATE_CONTEXT_FIELD`. 201 with the field and "
            "`Location: /api/admin/context/<name>`."
        ),
        request=CreateContextFieldSchemaSerializer,
        responses={201: ContextFieldSchemaSerializer, **error_responses(400, 409, 413, 415)},
    )
    def create(self, request: Request) -> Response:
        body = CreateContextFieldSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        field = create_context_field(fields=dict(body.validated_data), actor=request.user)
        return Response(
            serialize(field, ContextFieldSchemaSerializer),
            status=status.HTTP_201_CREATED,
            headers={"Location": f"/api/admin/context/{_path(field.name)}"},
        )

    @extend_schema(
        operation_id="getContextField",
        tags=["Context"],
        summary="Gets context field",
        description="The context field named in the path; 404 when there is none.",
        parameters=[CONTEXT_FIELD],
        responses={200: ContextFieldSchemaSerializer, **error_responses(404)},
    )
    def retrieve(self, request: Request, contextField: str) -> Response:
        field = ContextField.objects.filter(pk=contextField).first()
        if field is None:
            raise NotFoundError("Could not find context field")
        return Response(serialize(field, ContextFieldSchemaSerializer))

    @extend_schema(
        operation_id="updateContextField",
        tags=["Context"],
        summary="Update an existing context field",
        description=(
            "Replaces the field's settings (`context-field-updated`): `stickiness` and "
            "`legalValues` left out become `false` and none; `description` and `sortOrder` "
            "left out are kept (Unleash resets the sort order to 0). A `name` in the body is "
            "ignored. 404 for an unknown field. Needs `UPDATE_CONTEXT_FIELD`. 200, no body."
        ),
        parameters=[CONTEXT_FIELD],
        request=UpdateContextFieldSchemaSerializer,
        responses={200: NO_BODY, **error_responses(400, 404, 413, 415)},
    )
    def update(self, request: Request, contextField: str) -> Response:
        body = UpdateContextFieldSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        update_context_field(
            name=contextField, fields=dict(body.validated_data), actor=request.user
        )
        return _no_body()

    @extend_schema(
        operation_id="deleteContextField",
        tags=["Context"],
        summary="Delete an existing context field",
        description=(
            "Deletes the field (`context-field-deleted`), built-in ones included, as Unleash "
            "does. 409 `ConflictError` while a strategy of a flag that is not archived has a "
            "constraint on it; 404 for an unknown field. Needs `DELETE_CONTEXT_FIELD`. 200, "
            "no body."
        ),
        parameters=[CONTEXT_FIELD],
        request=None,
        responses={200: NO_BODY, **error_responses(404), 409: CONTEXT_FIELD_CONFLICT},
    )
    def destroy(self, request: Request, contextField: str) -> Response:
        try:
            delete_context_field(name=contextField, actor=request.user)
        except InUseError as error:
            raise ConflictError(error.message) from None
        return _no_body()

    @extend_schema(
        operation_id="validateContextFieldName",
        tags=["Context"],
        summary="Validate a context field",
        description=(
            "200 when the name may be used for a new context field; 400 when it is not "
            "URL-friendly, 409 `NameExistsError` when a field has it. Needs "
            "`UPDATE_CONTEXT_FIELD`."
        ),
        request=NameSchemaSerializer,
        responses={200: NO_BODY, **error_responses(400, 409, 413, 415)},
    )
    def validate(self, request: Request) -> Response:
        body = NameSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        check_context_field_name_free(body.validated_data["name"])
        return _no_body()

    @extend_schema(
        operation_id="getStrategiesByContextField",
        tags=["Strategies"],
        summary="Get strategies that use a context field",
        description=(
            "The strategies of flags that are not archived with a constraint on the field; an "
            "empty list when the field does not exist, as in Unleash."
        ),
        parameters=[CONTEXT_FIELD],
        responses={200: ContextFieldStrategiesSchemaSerializer, **error_responses()},
    )
    def strategies(self, request: Request, contextField: str) -> Response:
        return Response({"strategies": context_field_usage().strategies_using(contextField)})


class LegalValueViewSet(AdminApiMixin, viewsets.ViewSet):
    """One legal value of a context field at a time."""

    required_permission = UPDATE_CONTEXT_FIELD

    @extend_schema(
        operation_id="updateContextFieldLegalValue",
        tags=["Context"],
        summary="Add or update legal value for the context field",
        description=(
            "Adds the legal value, or replaces the description of the one with the same value "
            "(`context-field-updated`, the whole field before and after). 404 for an unknown "
            "field. Needs `UPDATE_CONTEXT_FIELD`. 200, no body."
        ),
        parameters=[CONTEXT_FIELD],
        request=LegalValueSchemaSerializer,
        responses={200: NO_BODY, **error_responses(400, 404, 413, 415)},
    )
    def create(self, request: Request, contextField: str) -> Response:
        body = LegalValueSchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        set_legal_value(
            name=contextField, legal_value=dict(body.validated_data), actor=request.user
        )
        return _no_body()

    @extend_schema(
        operation_id="deleteContextFieldLegalValue",
        tags=["Context"],
        summary="Delete legal value for the context field",
        description=(
            "Removes the legal value (one the field does not list: 200, nothing recorded); "
            "constraints that use it keep it, as in Unleash. 404 for an unknown field. Needs "
            "`UPDATE_CONTEXT_FIELD`. 200, no body."
        ),
        parameters=[CONTEXT_FIELD, LEGAL_VALUE],
        request=None,
        responses={200: NO_BODY, **error_responses(404)},
    )
    def destroy(self, request: Request, contextField: str, legalValue: str) -> Response:
        delete_legal_value(name=contextField, value=legalValue, actor=request.user)
        return _no_body()


def _strategy_or_404(name: str) -> StrategyDefinition:
    strategy = StrategyDefinition.objects.filter(pk=name).first()
    if strategy is None:
        raise strategy_not_found()
    return strategy


class StrategyViewSet(AdminApiMixin, viewsets.ViewSet):
    """Strategy types: the built-in ones (not editable) and custom ones, whose parameters an
    SDK's own implementation of the strategy reads."""

    required_permissions = {
        "list": NONE,
        "retrieve": NONE,
        "create": CREATE_STRATEGY,
        "update": UPDATE_STRATEGY,
        "destroy": DELETE_STRATEGY,
    }

    @extend_schema(
        operation_id="getAllStrategies",
        tags=["Strategies"],
        summary="Get all strategies",
        description="Every strategy type, built-in and custom, by sort order then name.",
        responses={200: StrategiesSchemaSerializer, **error_responses()},
    )
    def list(self, request: Request) -> Response:
        strategies = serialize(StrategyDefinition.objects.all(), StrategySchemaSerializer)
        return Response({"version": VERSION, "strategies": strategies})

    @extend_schema(
        operation_id="createStrategy",
        tags=["Strategies"],
        summary="Create a strategy",
        description=(
            "Creates a custom strategy type (`strategy-created`), editable and not deprecated. "
            "400 for a name that is not URL-friendly, no `parameters`, a parameter type that "
            "is not one of Unleash's or a parameter name given twice; 409 `NameExistsError` "
            "for a name taken. Needs `CREATE_STRATEGY`. 201 with the strategy and "
            "`Location: /api/admin/strategies/<name>`."
        ),
        request=CreateStrategySchemaSerializer,
        responses={201: StrategySchemaSerializer, **error_responses(400, 409, 413, 415)},
    )
    def create(self, request: Request) -> Response:
        body = CreateStrategySchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        strategy = create_strategy(fields=dict(body.validated_data), actor=request.user)
        return Response(
            serialize(strategy, StrategySchemaSerializer),
            status=status.HTTP_201_CREATED,
            headers={"Location": f"/api/admin/strategies/{_path(strategy.name)}"},
        )

    @extend_schema(
        operation_id="getStrategy",
        tags=["Strategies"],
        summary="Get a strategy definition",
        description="The strategy type named in the path; 404 when there is none.",
        parameters=[STRATEGY_NAME],
        responses={200: StrategySchemaSerializer, **error_responses(404)},
    )
    def retrieve(self, request: Request, name: str) -> Response:
        return Response(serialize(_strategy_or_404(name), StrategySchemaSerializer))

    @extend_schema(
        operation_id="updateStrategy",
        tags=["Strategies"],
        summary="Update a strategy type",
        description=(
            "Replaces a custom strategy's parameters, and its description and title when sent "
            "(`strategy-updated`). 403 `InvalidOperationError` for a built-in strategy (Unleash "
            "answers 500), 404 for an unknown one. Needs `UPDATE_STRATEGY`. 200, no body."
        ),
        parameters=[STRATEGY_NAME],
        request=UpdateStrategySchemaSerializer,
        responses={
            200: NO_BODY,
            **error_responses(400, 404, 413, 415),
            403: BUILT_IN_REFUSED,
        },
    )
    def update(self, request: Request, name: str) -> Response:
        body = UpdateStrategySchemaSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        update_strategy(name=name, fields=dict(body.validated_data), actor=request.user)
        return _no_body()

    @extend_schema(
        operation_id="removeStrategy",
        tags=["Strategies"],
        summary="Delete a strategy",
        description=(
            "Deletes a custom strategy type (`strategy-deleted`). 403 `InvalidOperationError` "
            "for a built-in one (Unleash answers 500); 409 `ConflictError` while strategies of "
            "flags, archived ones included, are of this type (Unleash deletes it and leaves "
            "them naming a type that no longer exists); 404 for an unknown one. Needs "
            "`DELETE_STRATEGY`. 200, no body."
        ),
        parameters=[STRATEGY_NAME],
        request=None,
        responses={
            200: NO_BODY,
            **error_responses(404),
            403: BUILT_IN_REFUSED,
            409: STRATEGY_IN_USE,
        },
    )
    def destroy(self, request: Request, name: str) -> Response:
        try:
            delete_strategy(name=name, actor=request.user)
        except InUseError as error:
            raise ConflictError(error.message) from None
        return _no_body()


class StrategyDeprecationViewSet(AdminApiMixin, viewsets.ViewSet):
    """Deprecating a strategy type hides it from new choices in Unleash's UI; flags keep it
    and may still be given it."""

    required_permission = UPDATE_STRATEGY
    reads_no_body = True  # as Unleash's `acceptAnyContentType` routes

    @extend_schema(
        operation_id="deprecateStrategy",
        tags=["Strategies"],
        summary="Deprecate a strategy",
        description=(
            "Marks the strategy deprecated (`strategy-deprecated`, recorded even when it "
            "already was), built-in ones included. 404 for an unknown strategy. Needs "
            "`UPDATE_STRATEGY`. 200, no body."
        ),
        parameters=[STRATEGY_NAME_ACTION],
        request=None,
        responses={200: NO_BODY, **error_responses(404, 413)},
    )
    def deprecate(self, request: Request, strategyName: str) -> Response:
        set_strategy_deprecated(name=strategyName, deprecated=True, actor=request.user)
        return _no_body()

    @extend_schema(
        operation_id="reactivateStrategy",
        tags=["Strategies"],
        summary="Reactivate a strategy",
        description=(
            "Marks the strategy not deprecated (`strategy-reactivated`, recorded even when it "
            "was not). 404 for an unknown strategy. Needs `UPDATE_STRATEGY`. 200, no body."
        ),
        parameters=[STRATEGY_NAME_ACTION],
        request=None,
        responses={200: NO_BODY, **error_responses(404, 413)},
    )
    def reactivate(self, request: Request, strategyName: str) -> Response:
        set_strategy_deprecated(name=strategyName, deprecated=False, actor=request.user)
        return _no_body()
