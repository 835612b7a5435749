"""Admin API of user groups. Every operation needs `ADMIN`."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from flagadmin.api.lookups import get_or_404, id_from_path
from flagadmin.api.responses import serialize
from flagadmin.api.schema import error_responses
from flagadmin.api.views import AdminApiMixin
from flagadmin.core import permissions as perms
from groups import services
from groups.models import Group
from groups.serializers import GroupSchemaSerializer, GroupsSchemaSerializer, GroupWriteSerializer

GROUP_ID_PARAMETER = OpenApiParameter(
    "groupId",
    str,
    OpenApiParameter.PATH,
    description="The group's id. Anything that is not the id of a group (also a non-numeric "
    "value such as `abc`) is a 404 `No group found`.",
)

CHECK_ORDER = (
    " Checks run in this order: 401, 403, 415, 400 (malformed JSON, then the body: its schema, "
    "`rootRole` naming a root role, every user id existing), 404 `No group found`, 400 for a "
    "SCIM-managed group whose name or members would change, 409 `Group name already exists`."
)


# Built once, as features/views.py's: copying the fields at each instantiation was most of a
# group update's cost (docs/benchmarks.md, "Kept serializers").
GROUP_WRITE = GroupWriteSerializer()


def get_group_or_404(group_id: str | int) -> Group:
    """The group the URL names."""
    return get_or_404(Group.objects.all(), services.GROUP_NOT_FOUND, pk=id_from_path(group_id))


def _group_body(group: Group) -> dict:
    # Read again: the body shows the group as stored, members and project roles included.
    return serialize(get_group_or_404(group.pk), GroupSchemaSerializer)


class GroupViewSet(AdminApiMixin, viewsets.ViewSet):
    """User groups: named sets of users that carry a root role and project roles."""

    required_permission = perms.ADMIN

    @extend_schema(
        operation_id="getAllGroups",
        tags=["Users"],
        summary="List the user groups",
        description="Every group with its members, `userCount` and `projects`, ordered by id.",
        responses={200: GroupsSchemaSerializer, **error_responses()},
    )
    def list(self, request: Request) -> Response:
        groups = Group.objects.order_by("id")
        return Response({"groups": serialize(groups, GroupSchemaSerializer)})

    @extend_schema(
        operation_id="createGroup",
        tags=["Users"],
        summary="Create a user group",
        description="Creates a group with its members (who join now, added by the caller). "
        "Omitted optional fields take their defaults. Audit event `group-created`. "
        "`Location` names the new group."
        " Checks run in this order: 401, 403, 415, 400 (malformed JSON, then the body), "
        "409 `Group name already exists`.",
        request=GroupWriteSerializer,
        responses={201: GroupSchemaSerializer, **error_responses(400, 409, 413, 415)},
    )
    def create(self, request: Request) -> Response:
        data = GROUP_WRITE.run_validation(request.data)
        group = services.create_group(
            actor=request.user,
            name=data["name"],
            description=data["description"],
            mappings_sso=data["mappingsSSO"],
            root_role=data["rootRole"],
            users=data["users"],
        )
        return Response(
            _group_body(group),
            status=status.HTTP_201_CREATED,
            headers={"Location": f"/api/admin/groups/{group.pk}"},
        )

    @extend_schema(
        operation_id="getGroup",
        tags=["Users"],
        summary="Get a user group",
        parameters=[GROUP_ID_PARAMETER],
        responses={200: GroupSchemaSerializer, **error_responses(404)},
    )
    def retrieve(self, request: Request, groupId: str) -> Response:
        return Response(serialize(get_group_or_404(groupId), GroupSchemaSerializer))

    @extend_schema(
        operation_id="updateGroup",
        tags=["Users"],
        summary="Replace a user group",
        description="Replaces every detail of the group: an omitted optional field takes its "
        "default (`description` null, `mappingsSSO` [], `rootRole` null, `users` []). All or "
        "nothing, in one transaction. Members who stay keep `joinedAt` and `createdBy`; new "
        "members join now, added by the caller; the others leave. A SCIM-managed group "
        "(`scimId` set) keeps its name and members; its description and root role may change. "
        "Renaming a group to its own name is not a conflict. Audit event `group-updated` with "
        "the user ids before and after; none when nothing changed." + CHECK_ORDER,
        parameters=[GROUP_ID_PARAMETER],
        request=GroupWriteSerializer,
        responses={200: GroupSchemaSerializer, **error_responses(400, 404, 409, 413, 415)},
    )
    def update(self, request: Request, groupId: str) -> Response:
        # The body is validated before the group is looked up: the contract's order is
        # 400 before 404.
        data = GROUP_WRITE.run_validation(request.data)
        group = services.update_group(
            actor=request.user,
            group_id=id_from_path(groupId),
            name=data["name"],
            description=data["description"],
            mappings_sso=data["mappingsSSO"],
            root_role=data["rootRole"],
            users=data["users"],
        )
        return Response(_group_body(group))

    @extend_schema(
        operation_id="deleteGroup",
        tags=["Users"],
        summary="Delete a user group",
        description="Deletes the group, its memberships and the project roles it held. "
        "200 with an empty body, as Unleash answers. Audit event `group-deleted`.",
        parameters=[GROUP_ID_PARAMETER],
        responses={200: OpenApiResponse(description="Deleted."), **error_responses(404)},
    )
    def destroy(self, request: Request, groupId: str) -> Response:
        services.delete_group(actor=request.user, group_id=id_from_path(groupId))
        return Response(status=status.HTTP_200_OK)
