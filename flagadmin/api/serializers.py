"""Serializers of the core shared by several apps."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from flagadmin.api.fields import (
    INT64_MAX,
    PrintableCharField,
    StrictCharField,
    StrictChoiceField,
    StrictDateTimeField,
    StrictIntegerField,
    StrictListField,
    StrictSerializer,
)
from flagadmin.api.responses import ResponseShape
from flagadmin.core.models import AccountType, ApiToken, Role, TokenType, User
from flagadmin.core.services import environment_exists, unknown_projects


@extend_schema_serializer(component_name="userSchema")
class UserSchemaSerializer(ResponseShape, serializers.ModelSerializer):
    """The specification's user object (`userSchema`)."""

    isAPI = serializers.SerializerMethodField()
    imageUrl = serializers.CharField(source="image_url")
    loginAttempts = serializers.IntegerField(source="login_attempts")
    emailSent = serializers.BooleanField(source="email_sent")
    rootRole = serializers.IntegerField(source="root_role_id", allow_null=True)
    seenAt = serializers.DateTimeField(source="seen_at", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    accountType = serializers.CharField(source="account_type")
    scimId = serializers.CharField(source="scim_id", allow_null=True)

    class Meta:
        model = User
        fields = [
            "id",
            "isAPI",
            "name",
            "email",
            "username",
            "imageUrl",
            "loginAttempts",
            "emailSent",
            "rootRole",
            "seenAt",
            "createdAt",
            "accountType",
            "scimId",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.BooleanField())
    def get_isAPI(self, user: User) -> bool:
        return user.account_type != AccountType.USER


# --- API tokens and service accounts ----------------------------------------------------

SECRET_HELP = "The whole token, to send as the `Authorization` header. Shown only now."
ADMIN_SCOPE_MESSAGE = "must be {0} (or absent) for an admin token, which reaches everything"


class ApiTokenTypeField(StrictChoiceField):
    """A token type as Unleash 8.2 reads it: `client` in any case, and its newer name
    `backend` (stored as `client`); `frontend` in any case; `admin` as written."""

    CLIENT_NAMES = ("client", "backend")

    def to_internal_value(self, data):
        if isinstance(data, str) and data.lower() in self.CLIENT_NAMES:
            data = TokenType.CLIENT.value
        elif isinstance(data, str) and data.lower() == TokenType.FRONTEND:
            data = TokenType.FRONTEND.value
        return super().to_internal_value(data)


@extend_schema_serializer(component_name="createApiTokenSchema")
class CreateApiTokenSchemaSerializer(StrictSerializer):
    """An admin token acts as an administrator; a client token is for SDKs and a frontend token
    for browser and mobile apps (`/api/frontend`); both are refused on the admin API and bound
    to projects (`["*"]`: all) and one environment."""

    tokenName = PrintableCharField(max_length=255, help_text="A name to recognise the token by.")
    type = ApiTokenTypeField(
        choices=[TokenType.ADMIN.value, TokenType.CLIENT.value, TokenType.FRONTEND.value]
    )
    projects = StrictListField(
        child=StrictCharField(max_length=255),
        min_length=1,
        required=False,
        help_text='Client tokens: ids of existing projects, or `["*"]` (the default) for all. '
        'Admin tokens: absent or `["*"]`.',
    )
    environment = StrictCharField(
        max_length=255,
        required=False,
        help_text="Client tokens: an existing environment (default `development`). "
        "Admin tokens: absent or `*`.",
    )
    expiresAt = StrictDateTimeField(
        future=True,
        required=False,
        allow_null=True,
        help_text="When the token stops working; absent or null: never.",
    )

    def validate(self, attrs: dict) -> dict:
        projects = attrs.get("projects")
        environment = attrs.get("environment")
        if attrs["type"] == TokenType.ADMIN:
            errors = {}
            if projects is not None and projects != ["*"]:
                errors["projects"] = [ADMIN_SCOPE_MESSAGE.format('["*"]')]
            if environment is not None and environment != "*":
                errors["environment"] = [ADMIN_SCOPE_MESSAGE.format('"*"')]
            if errors:
                raise serializers.ValidationError(errors)
            return {**attrs, "projects": ["*"], "environment": "*"}
        # A list holding "*" means every project; the other entries add nothing.
        projects = ["*"] if not projects or "*" in projects else list(dict.fromkeys(projects))
        environment = "development" if environment is None else environment
        errors = {}
        missing = set(unknown_projects(projects))
        if missing:
            errors["projects"] = {
                str(index): ["must be the id of an existing project"]
                for index, project in enumerate(attrs.get("projects") or [])
                if project in missing
            }
        if not environment_exists(environment):
            errors["environment"] = ["must be the name of an existing environment"]
        if errors:
            raise serializers.ValidationError(errors)
        return {**attrs, "projects": projects, "environment": environment}


@extend_schema_serializer(component_name="apiTokenSchema")
class ApiTokenSchemaSerializer(ResponseShape):
    """An API token as listed: what it reaches, never its secret. Unleash's `apiTokenSchema`
    allows no other property, so the row's id (in the `api-token-created` event) is not here."""

    tokenName = serializers.CharField(source="name")
    type = serializers.ChoiceField(
        choices=[TokenType.ADMIN.value, TokenType.CLIENT.value, TokenType.FRONTEND.value]
    )
    project = serializers.SerializerMethodField(
        help_text="The one project the token reaches, `*` for all, `[]` for several."
    )
    projects = serializers.SerializerMethodField()
    environment = serializers.CharField()
    expiresAt = serializers.DateTimeField(source="expires_at", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    seenAt = serializers.DateTimeField(
        source="last_used_at", allow_null=True, help_text="Last use (updated every few minutes)."
    )

    @extend_schema_field(serializers.CharField())
    def get_project(self, token: ApiToken) -> str:
        projects = token.project.split(",")
        return projects[0] if len(projects) == 1 else "[]"

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_projects(self, token: ApiToken) -> list[str]:
        return token.project.split(",")


@extend_schema_serializer(component_name="createdApiTokenSchema")
class CreatedApiTokenSchemaSerializer(ApiTokenSchemaSerializer):
    """A token just created: the only time its secret is ever shown."""

    secret = serializers.SerializerMethodField(help_text=SECRET_HELP)

    @extend_schema_field(serializers.CharField())
    def get_secret(self, token: ApiToken) -> str:
        # The plaintext exists only in memory, handed over by the view that just issued it.
        return self.context["secret"]


@extend_schema_serializer(component_name="apiTokensSchema")
class ApiTokensSchemaSerializer(serializers.Serializer):
    tokens = ApiTokenSchemaSerializer(many=True)


@extend_schema_serializer(component_name="createServiceAccountSchema")
class CreateServiceAccountSchemaSerializer(StrictSerializer):
    """A service account to create: a user that cannot sign in and acts through its tokens."""

    username = StrictCharField(max_length=255)
    name = StrictCharField(max_length=255)
    rootRole = StrictIntegerField(
        min_value=1,
        max_value=INT64_MAX,
        help_text="Id of a root role: Admin 1, Editor 2, Viewer 3.",
    )

    def validate_rootRole(self, value: int) -> Role:
        role = Role.objects.filter(pk=value).first()
        if role is None or not role.is_root:
            raise serializers.ValidationError("must be the id of a root role")
        return role


@extend_schema_serializer(component_name="serviceAccountSchema")
class ServiceAccountSchemaSerializer(UserSchemaSerializer):
    """A service account: a user that cannot sign in and acts through its tokens."""


@extend_schema_serializer(component_name="createPatSchema")
class CreatePatSchemaSerializer(StrictSerializer):
    """A personal access token to create for the service account; its secret is shown once."""

    description = StrictCharField(max_length=255, help_text="What the token is for.")
    expiresAt = StrictDateTimeField(
        future=True,
        required=False,
        allow_null=True,
        help_text="When the token stops working; absent or null: never.",
    )


@extend_schema_serializer(component_name="patSchema")
class PatSchemaSerializer(ResponseShape):
    """A personal access token just created; `secret` is shown only now."""

    id = serializers.IntegerField()
    secret = serializers.SerializerMethodField(help_text=SECRET_HELP)

    @extend_schema_field(serializers.CharField())
    def get_secret(self, token: ApiToken) -> str:
        # The plaintext exists only in memory, handed over by the view that just issued it.
        return self.context["secret"]

    description = serializers.CharField(source="name")
    expiresAt = serializers.DateTimeField(source="expires_at", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    seenAt = serializers.DateTimeField(source="last_used_at", allow_null=True)
    userId = serializers.IntegerField(source="user_id")
