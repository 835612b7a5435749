"""GET /api/admin/user (Unleash's getMe): who is calling, with what permissions."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from flagadmin.api.principals import TokenPrincipal
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.serializers import UserSchemaSerializer
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from flagadmin.core.models import Role, User


@extend_schema_serializer(component_name="permissionSchema")
class PermissionSchemaSerializer(serializers.Serializer):
    permission = serializers.CharField()
    project = serializers.CharField(required=False, help_text="For a project role's.")


@extend_schema_serializer(component_name="meSchema")
class MeSchemaSerializer(serializers.Serializer):
    user = serializers.DictField(
        help_text="A user: `userSchema`. An admin token: its name as `username`, `type`, "
        "`environment`, `projects`, `permissions` and `internalAdminTokenUserId` (-42), as "
        "Unleash answers, but never its secret (Unleash echoes the token back)."
    )
    permissions = PermissionSchemaSerializer(many=True)
    feedback = serializers.ListField(child=serializers.DictField(), help_text="Always [].")
    splash = serializers.DictField(help_text="Always {}.")


def user_permissions(user: User) -> list[dict[str, str]]:
    """The user's root permissions (its root role and its groups'), then each project role's
    permissions with their project (held directly or through a group), sorted."""
    root = sorted(user.root_permissions())
    held = Role.objects.filter(project_assignments__user=user).values_list(
        "project_assignments__project_id", "permissions"
    )
    through_groups = Role.objects.filter(
        project_assignments__group__memberships__user=user
    ).values_list("project_assignments__project_id", "permissions")
    granted = {
        (project, permission)
        for project, permissions in [*held, *through_groups]
        for permission in permissions
    }
    return [{"permission": permission} for permission in root] + [
        {"permission": permission, "project": project} for project, permission in sorted(granted)
    ]


def me(principal: Any) -> dict[str, Any]:
    if isinstance(principal, TokenPrincipal):
        token = principal.token
        user: dict[str, Any] = {
            "username": token.name,
            "permissions": [perms.ADMIN],
            "environment": token.environment,
            "type": token.type,
            "projects": [token.project],
            "internalAdminTokenUserId": User.ADMIN_TOKEN_USER_ID,
        }
        permissions = [{"permission": perms.ADMIN}]
    else:
        user = serialize(principal, UserSchemaSerializer)
        permissions = user_permissions(principal)
    return {"user": user, "permissions": permissions, "feedback": [], "splash": {}}


class MeView(AdminApiMixin, APIView):
    required_permission = perms.NONE

    @extend_schema(
        tags=["Users"],
        operation_id="getMe",
        summary="Get your own user details",
        description="The caller: a user (signed in, or through a personal or service-account "
        "token) with its root and project permissions; for an admin token, the token as "
        "Unleash describes it, without its secret.",
        responses={200: OpenApiResponse(MeSchemaSerializer), **error_responses()},
    )
    def get(self, request: Request) -> Response:
        return Response(me(request.user))
