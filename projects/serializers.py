"""Request and response bodies of the project endpoints.

The list (`projectsSchema`) is built by `projects.selectors` as plain dicts and encoded once per
computation, so its serializers below describe it for the OpenAPI document only; a test holds
the two in step (the keys of a listed project are exactly the fields of `projectSchema`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_serializer
from rest_framework import serializers

from flagadmin.api.fields import (
    NonBlankPrintableCharField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
    UrlFriendlyNameField,
)
from flagadmin.api.responses import Attrs, ResponseShape
from projects.models import Environment, Project, ProjectMode, ProjectRoleAssignment
from projects.services import group_refusals, role_refusals, user_refusals

# --- response: the list ------------------------------------------------------------------------


@extend_schema_serializer(component_name="projectOwnerUserSchema")
class ProjectOwnerUserSerializer(serializers.Serializer):
    ownerType = serializers.ChoiceField(choices=["user"])
    name = serializers.CharField(help_text="The user's name, else username, else email.")
    email = serializers.CharField(allow_null=True)
    imageUrl = serializers.CharField(allow_null=True, help_text="Null when none is set.")


@extend_schema_serializer(component_name="projectOwnerGroupSchema")
class ProjectOwnerGroupSerializer(serializers.Serializer):
    ownerType = serializers.ChoiceField(choices=["group"])
    name = serializers.CharField()


@extend_schema_serializer(component_name="projectOwnerSystemSchema")
class ProjectOwnerSystemSerializer(serializers.Serializer):
    ownerType = serializers.ChoiceField(choices=["system"])


ProjectOwnerSerializer = PolymorphicProxySerializer(
    component_name="projectOwnerSchema",
    serializers={
        "user": ProjectOwnerUserSerializer,
        "group": ProjectOwnerGroupSerializer,
        "system": ProjectOwnerSystemSerializer,
    },
    resource_type_field_name="ownerType",
    many=False,
)


@extend_schema_serializer(component_name="projectSchema")
class ProjectSchemaSerializer(serializers.Serializer):
    """A project with figures computed when read."""

    id = serializers.CharField(help_text="Project id.")
    name = serializers.CharField()
    description = serializers.CharField(allow_null=True)
    health = serializers.IntegerField(
        min_value=0,
        max_value=100,
        help_text="round(100 - stale% - potentially stale%) over the non-archived flags "
        "(100 without flags), computed when read.",
    )
    featureCount = serializers.IntegerField(help_text="Non-archived flags.")
    staleFeatureCount = serializers.IntegerField(help_text="Non-archived flags marked stale.")
    potentiallyStaleFeatureCount = serializers.IntegerField(
        help_text="Non-archived flags, not stale, older than their type's expected lifetime "
        "(release and experiment 40 days, operational 7; kill-switch and permission never)."
    )
    memberCount = serializers.IntegerField(
        help_text="Distinct users holding a project role, directly or through a group."
    )
    favorite = serializers.BooleanField(help_text="Always false for tokens not bound to a user.")
    mode = serializers.ChoiceField(choices=ProjectMode.values)
    defaultStickiness = serializers.CharField()
    createdAt = serializers.DateTimeField()
    updatedAt = serializers.DateTimeField(allow_null=True)
    lastUpdatedAt = serializers.DateTimeField(
        allow_null=True, help_text="Time of the newest audit event about a flag of the project."
    )
    archivedAt = serializers.DateTimeField(allow_null=True)
    lastReportedFlagUsage = serializers.DateTimeField(
        allow_null=True, help_text="Newest `lastSeenAt` of the project's flags."
    )
    owners = serializers.ListField(
        child=ProjectOwnerSerializer,
        help_text="Users, then groups, holding the Owner role, each by assignment time; "
        '`[{"ownerType": "system"}]` when there are none.',
    )


@extend_schema_serializer(component_name="projectsSchema", many=False)
class ProjectsSchemaSerializer(serializers.Serializer):
    version = serializers.IntegerField(help_text="Always 1.")
    projects = ProjectSchemaSerializer(many=True)


@extend_schema_serializer(component_name="projectDetailSchema")
class ProjectDetailSchemaSerializer(ProjectSchemaSerializer):
    """A project as listed, with the environments enabled in it."""

    environments = serializers.ListField(
        child=serializers.CharField(), help_text="Environments enabled in the project."
    )


# --- requests ----------------------------------------------------------------------------------


@extend_schema_serializer(component_name="createProjectSchema")
class CreateProjectSchemaSerializer(StrictSerializer):
    """A new project. Other body fields are ignored."""

    id = UrlFriendlyNameField(
        max_length=100,
        help_text="Unique project id: 1-100 characters among `A-Z a-z 0-9 - _ . ! ~ * ' ( )`, "
        "not `.` or `..`.",
    )
    name = NonBlankPrintableCharField(
        max_length=255, help_text="Display name, not blank, without control characters."
    )
    description = StrictCharField(
        allow_null=True, allow_blank=True, default=None, help_text='`""` is stored as null.'
    )
    mode = StrictChoiceField(choices=ProjectMode.values, default=ProjectMode.OPEN)
    defaultStickiness = StrictCharField(
        source="default_stickiness", min_length=1, max_length=100, default="default"
    )
    environments = StrictListField(
        child=StrictCharField(max_length=100),
        default=None,
        help_text="Environments to enable in the project; when absent, every enabled "
        "environment. An empty list enables none.",
    )

    def validate_description(self, value: str | None) -> str | None:
        return value or None

    def validate_environments(self, value: list[str] | None) -> list[str] | None:
        """Repeated names collapse; each must name an existing environment (one query)."""
        if value is None:
            return None
        wanted = list(dict.fromkeys(value))
        known = set(Environment.objects.filter(name__in=wanted).values_list("name", flat=True))
        errors = {
            str(index): ["must be the name of an existing environment"]
            for index, name in enumerate(value)
            if name not in known
        }
        if errors:
            raise serializers.ValidationError(errors)
        return wanted


@extend_schema_serializer(component_name="projectAddAccessSchema")
class ProjectAddAccessSchemaSerializer(StrictSerializer):
    """Project roles to give to users and groups: every listed role to every listed holder."""

    roles = StrictListField(
        child=StrictIntegerField(),
        min_length=1,
        help_text="Ids of project roles (Owner 4, Member 5, or a custom project role).",
    )
    groups = StrictListField(child=StrictIntegerField(), default=list, help_text="Group ids.")
    users = StrictListField(child=StrictIntegerField(), default=list, help_text="User ids.")

    @staticmethod
    def _refused(value: list[int], refusals: dict[int, str]) -> list[int]:
        """Repeated ids collapse; each id refused fails with its refusal (one details entry
        each). The grant checks again under the members' lock (`add_project_access`)."""
        if refusals:
            raise serializers.ValidationError(
                {str(index): [message] for index, message in refusals.items()}
            )
        return list(dict.fromkeys(value))

    def validate_roles(self, value: list[int]) -> list[int]:
        return self._refused(value, role_refusals(value))

    def validate_groups(self, value: list[int]) -> list[int]:
        return self._refused(value, group_refusals(value))

    def validate_users(self, value: list[int]) -> list[int]:
        return self._refused(value, user_refusals(value))


@extend_schema_serializer(component_name="projectAccessHolderSchema")
class ProjectAccessHolderSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    roles = serializers.ListField(child=serializers.IntegerField())


@extend_schema_serializer(component_name="projectAccessSchema")
class ProjectAccessSchemaSerializer(ResponseShape):
    """Who holds which project role in the project, after the change."""

    project = serializers.CharField(source="pk")
    users = ProjectAccessHolderSerializer(many=True)
    groups = ProjectAccessHolderSerializer(many=True)

    def get_attrs(self, items: Sequence[Project]) -> Mapping[Project, Attrs]:
        # Every role assignment of the projects in one query: users and groups by id, each
        # with its roles in role order.
        users: dict[str, dict[int, list[int]]] = {project.pk: {} for project in items}
        groups: dict[str, dict[int, list[int]]] = {project.pk: {} for project in items}
        rows = (
            ProjectRoleAssignment.objects.filter(project_id__in=list(users))
            .order_by("role_id", "id")
            .values_list("project_id", "role_id", "user_id", "group_id")
        )
        for project_id, role_id, user_id, group_id in rows:
            if user_id is not None:
                users[project_id].setdefault(user_id, []).append(role_id)
            else:
                groups[project_id].setdefault(group_id, []).append(role_id)
        return {
            project: {
                "users": _holders(users[project.pk]),
                "groups": _holders(groups[project.pk]),
            }
            for project in items
        }


def _holders(roles_by_id: dict[int, list[int]]) -> list[dict[str, Any]]:
    return [{"id": key, "roles": roles} for key, roles in sorted(roles_by_id.items())]
