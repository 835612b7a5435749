"""Request and response serializers of the groups API (`createGroupSchema`, `groupSchema`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from flagadmin.api.fields import (
    INT64_MAX,
    NonBlankCharField,
    StrictCharField,
    StrictIntegerField,
    StrictListField,
    StrictNumberField,
    StrictSerializer,
)
from flagadmin.api.responses import Attrs, ResponseShape
from flagadmin.api.serializers import UserSchemaSerializer
from flagadmin.core.models import ROOT_ROLE_TYPES, Role, User
from groups.models import Group, GroupMembership

ROOT_ROLE_ID_MESSAGE = (
    "must be the id of a root role (1 Admin, 2 Editor, 3 Viewer, or a custom root role)"
)


@extend_schema_field({"type": "number", "nullable": True, "example": 3})
class RootRoleIdField(StrictNumberField):
    """A root role's id. The specification types it `number`, so an integral `3.0` is accepted;
    the value is resolved to the `Role`, and a project role or an unknown id is refused."""

    def to_internal_value(self, data: Any) -> Role:
        number = super().to_internal_value(data)
        role = None
        if float(number).is_integer() and 0 < number <= INT64_MAX:
            role = Role.objects.filter(pk=int(number), type__in=ROOT_ROLE_TYPES).first()
        if role is None:
            raise serializers.ValidationError(ROOT_ROLE_ID_MESSAGE, code="invalid")
        return role


@extend_schema_serializer(component_name="createGroupUserIdSchema")
class GroupUserIdRequestSerializer(StrictSerializer):
    """A user, by id."""

    id = StrictIntegerField(min_value=0, max_value=INT64_MAX, help_text="The user's id.")


@extend_schema_serializer(component_name="createGroupUserSchema")
class GroupUserRequestSerializer(StrictSerializer):
    """A member to have in the group."""

    user = GroupUserIdRequestSerializer(help_text="The user to have in the group.")


# `{"user":{"id":1}},` is 19 bytes: no 100 kB body holds more members than this.
MAX_MEMBERS_PER_REQUEST = 6000


@extend_schema_serializer(component_name="createGroupSchema")
class GroupWriteSerializer(StrictSerializer):
    """The whole group as the client wants it (POST and PUT). An omitted optional field takes
    its default, so a PUT replaces every detail of the group."""

    name = NonBlankCharField(max_length=255, help_text="The group's name, unique and not blank.")
    description = StrictCharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        default=None,
        help_text="What the group is for. Omitted means null.",
    )
    mappingsSSO = StrictListField(
        child=StrictCharField(max_length=255),
        required=False,
        default=list,
        help_text="SSO group names that map to this group (repeats collapse). Omitted means [].",
    )
    rootRole = RootRoleIdField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Id of the root role every member gets through the group: 1 Admin, "
        "2 Editor, 3 Viewer or a custom root role (a project role is refused). "
        "Omitted or null means none.",
    )
    users = StrictListField(
        child=GroupUserRequestSerializer(),
        required=False,
        default=list,
        # A PUT replaces every member, so a big group needs them all in one body: the cap is
        # what a 100 kB body can hold, not the 1,000 of other lists.
        max_length=MAX_MEMBERS_PER_REQUEST,
        help_text="The members (repeated ids collapse). Omitted means [], i.e. no members. "
        f"At most {MAX_MEMBERS_PER_REQUEST}.",
    )

    def validate_mappingsSSO(self, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    def validate_users(self, value: list[dict]) -> list[User]:
        """Resolves the ids to users in one query; each unknown id is one error, at the index
        where it first appears."""
        first_index: dict[int, int] = {}
        for index, item in enumerate(value):
            first_index.setdefault(item["user"]["id"], index)
        found = User.objects.in_bulk(list(first_index))
        missing = {
            index: {"user": {"id": ["must be the id of an existing user"]}}
            for user_id, index in first_index.items()
            if user_id not in found
        }
        if missing:
            raise serializers.ValidationError(missing)
        return [found[user_id] for user_id in first_index]


class GroupMemberSchemaSerializer(serializers.ModelSerializer):
    """One member of a group: when and by whom it was added, and the user."""

    joinedAt = serializers.DateTimeField(source="joined_at")
    createdBy = serializers.CharField(
        source="created_by", allow_null=True, help_text="Who added the user (audit name)."
    )
    user = UserSchemaSerializer()

    class Meta:
        model = GroupMembership
        fields = ["joinedAt", "createdBy", "user"]
        read_only_fields = fields


extend_schema_serializer(component_name="groupUserModelSchema")(GroupMemberSchemaSerializer)


@extend_schema_serializer(component_name="groupSchema")
class GroupSchemaSerializer(ResponseShape, serializers.ModelSerializer):
    """A user group with its members and the projects where it holds a role."""

    mappingsSSO = serializers.ListField(child=serializers.CharField(), source="mappings_sso")
    rootRole = serializers.IntegerField(source="root_role_id", allow_null=True)
    createdBy = serializers.CharField(source="created_by", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    users = GroupMemberSchemaSerializer(many=True)
    userCount = serializers.SerializerMethodField()
    projects = serializers.SerializerMethodField()
    scimId = serializers.CharField(
        source="scim_id",
        allow_null=True,
        help_text="Set when SCIM manages the group: its name and members are then read-only.",
    )

    class Meta:
        model = Group
        fields = [
            "id",
            "name",
            "description",
            "mappingsSSO",
            "rootRole",
            "createdBy",
            "createdAt",
            "users",
            "userCount",
            "projects",
            "scimId",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.IntegerField(help_text="Number of members."))
    def get_userCount(self, group: Group) -> int:
        return len(group.users)

    @extend_schema_field(
        serializers.ListField(
            child=serializers.CharField(),
            help_text="Ids of the projects where the group holds a project role.",
        )
    )
    def get_projects(self, group: Group) -> list[str]:
        return group.project_ids

    def get_attrs(self, items: Sequence[Group]) -> Mapping[Group, Attrs]:
        # Two queries whatever the number of groups: the members with their users, then the
        # projects where each group holds a role.
        members: dict[int, list[GroupMembership]] = {group.pk: [] for group in items}
        for membership in GroupMembership.objects.filter(group__in=items).select_related("user"):
            members[membership.group_id].append(membership)
        projects: dict[int, set[str]] = {group.pk: set() for group in items}
        # Through the reverse relation: groups must not import the projects app.
        assignments = Group.objects.filter(pk__in=members, project_assignments__isnull=False)
        for group_id, project_id in assignments.values_list("pk", "project_assignments__project"):
            projects[group_id].add(project_id)
        return {
            group: {"users": members[group.pk], "project_ids": sorted(projects[group.pk])}
            for group in items
        }


@extend_schema_serializer(component_name="groupsSchema", many=False)
class GroupsSchemaSerializer(serializers.Serializer):
    groups = GroupSchemaSerializer(many=True)
