"""User groups: named sets of users that can carry a root role and project roles."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from flagadmin.core.models import ROOT_ROLE_TYPES, Role


class Group(models.Model):
    name = models.CharField(max_length=255, unique=True)
    description = models.TextField(null=True, blank=True)
    # SSO group names (exactly as the identity provider sends them) that map to this group.
    mappings_sso = models.JSONField("SSO group mappings", default=list, blank=True)
    root_role = models.ForeignKey(
        Role,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="root_groups",
        limit_choices_to={"type__in": ROOT_ROLE_TYPES},
    )
    scim_id = models.CharField("SCIM id", max_length=255, null=True, blank=True, unique=True)
    created_by = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]
        constraints = [
            # The API refuses an empty name; the database does too, whoever writes.
            models.CheckConstraint(condition=~models.Q(name=""), name="group_name_not_empty"),
        ]

    def __str__(self) -> str:
        return self.name


class GroupMembership(models.Model):
    """A user's membership of a group, with who added it and how."""

    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="group_memberships"
    )
    joined_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=255, null=True, blank=True)
    # True when SAML group syncing added it: only such memberships are removed by syncing.
    added_by_sso = models.BooleanField(default=False)

    class Meta:
        ordering = ["joined_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["group", "user"], name="group_membership_unique"),
        ]
        indexes = [models.Index(fields=["user"], name="group_membership_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.group}"
