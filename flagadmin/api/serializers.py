"""Serializers of the core shared by several apps."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from flagadmin.models import AccountType, User


class UserSchemaSerializer(serializers.ModelSerializer):
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
