"""Admin API of user administration (`/api/admin/user-admin`). Every operation needs `ADMIN`."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.serializers import UserSchemaSerializer
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from flagadmin.core.models import ROOT_ROLE_TYPES, Role
from users import services
from users.serializers import RoleSchemaSerializer, UserCreateSerializer, UsersSchemaSerializer


class UserAdminViewSet(AdminApiMixin, viewsets.ViewSet):
    """User administration: people who can be given root roles, groups and project roles."""

    required_permission = perms.ADMIN

    @extend_schema(
        operation_id="getUsers",
        tags=["Users"],
        summary="List the users",
        description="Every person, ordered by id; the system users that API tokens act as and "
        "service accounts are not listed. `rootRoles` lists the root roles users can be given.",
        responses={200: UsersSchemaSerializer, **error_responses()},
    )
    def list(self, request: Request) -> Response:
        users = services.listed_users()
        roles = Role.objects.filter(type__in=ROOT_ROLE_TYPES).order_by("id")
        return Response(
            {
                "users": serialize(users, UserSchemaSerializer),
                "rootRoles": serialize(roles, RoleSchemaSerializer),
            }
        )

    @extend_schema(
        operation_id="createUser",
        tags=["Users"],
        summary="Create a user",
        description="Creates a person with a root role. At least one of `email` and `username` "
        "is required; both are unique whatever their case (409 `NameExistsError`). "
        "Audit event `user-created`."
        " Checks run in this order: 401, 403, 415, 400 (malformed JSON, then the body), 409.",
        request=UserCreateSerializer,
        responses={201: UserSchemaSerializer, **error_responses(400, 409, 413, 415)},
    )
    def create(self, request: Request) -> Response:
        body = UserCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        user = services.create_user(
            actor=request.user,
            email=data.get("email"),
            username=data.get("username"),
            name=data.get("name"),
            root_role=data["rootRole"],
            password=data.get("password"),
        )
        return Response(serialize(user, UserSchemaSerializer), status=status.HTTP_201_CREATED)
