"""The ground floor every app builds on: users, roles, API tokens and audit events."""

from __future__ import annotations

import hashlib

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from flagadmin.core import permissions as perms


class RoleType(models.TextChoices):
    ROOT = "root", "Root"
    ROOT_CUSTOM = "root-custom", "Custom root"
    PROJECT = "project", "Project"
    CUSTOM = "custom", "Custom project"


# The role types a user's or a group's root role may have (a list: it is part of a field's
# limit_choices_to, which migrations compare).
ROOT_ROLE_TYPES = [RoleType.ROOT, RoleType.ROOT_CUSTOM]


class Role(models.Model):
    """A named set of permissions. Ids 1-5 are Unleash's fixed ids, because clients send them."""

    ADMIN = 1
    EDITOR = 2
    VIEWER = 3
    OWNER = 4
    MEMBER = 5

    name = models.CharField(max_length=255, unique=True)
    description = models.TextField(blank=True, default="")
    type = models.CharField(max_length=32, choices=RoleType.choices)
    permissions = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_root(self) -> bool:
        return self.type in ROOT_ROLE_TYPES


class AccountType(models.TextChoices):
    USER = "User", "User"
    SERVICE = "Service Account", "Service account"
    SYSTEM = "System", "System"


class UserManager(BaseUserManager["User"]):
    def get_by_natural_key(self, username: str | None) -> User:
        # People sign in to the Django admin with their username or their email.
        return self.get(
            models.Q(username__iexact=username) | models.Q(email__iexact=username),
            account_type=AccountType.USER,
        )

    def create_user(
        self,
        username: str | None = None,
        email: str | None = None,
        password: str | None = None,
        **extra,
    ) -> User:
        user = self.model(username=username or None, email=email or None, **extra)
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save(using=self._db)
        return user

    def create_superuser(
        self, username: str, email: str | None = None, password: str | None = None, **extra
    ) -> User:
        extra.setdefault("root_role_id", Role.ADMIN)
        return self.create_user(username=username, email=email, password=password, **extra)


class User(AbstractBaseUser):
    """A person, a service account, or one of the two system users that tokens act as."""

    ADMIN_TOKEN_USER_ID = -42
    SYSTEM_USER_ID = -1337

    name = models.CharField(max_length=255, null=True, blank=True)
    username = models.CharField(max_length=255, null=True, blank=True, unique=True)
    email = models.CharField(max_length=255, null=True, blank=True)
    image_url = models.CharField("image URL", max_length=1024, blank=True, default="")
    login_attempts = models.PositiveIntegerField(default=0)
    seen_at = models.DateTimeField(null=True, blank=True)
    root_role = models.ForeignKey(
        Role,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="users",
        limit_choices_to={"type__in": ROOT_ROLE_TYPES},
    )
    scim_id = models.CharField("SCIM id", max_length=255, null=True, blank=True)
    account_type = models.CharField(
        max_length=32, choices=AccountType.choices, default=AccountType.USER
    )
    is_active = models.BooleanField(default=True)
    email_sent = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    objects = UserManager()

    USERNAME_FIELD = "username"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = ["email"]

    class Meta:
        ordering = ["id"]
        constraints = [
            # Emails are unique whatever their case (sign-in matches them case-insensitively).
            models.UniqueConstraint(Lower("email"), name="user_email_ci_unique"),
            # Usernames too: the Django admin's sign-in looks them up case-insensitively, so
            # "Bob" and "bob" side by side would lock both out.
            models.UniqueConstraint(Lower("username"), name="user_username_ci_unique"),
        ]

    def __str__(self) -> str:
        return self.display_name

    @property
    def display_name(self) -> str:
        """Name, else username, else email, as Unleash shows people."""
        return self.name or self.username or self.email or "unknown"

    @property
    def audit_name(self) -> str:
        """What audit events record as the actor: email, else username (Unleash's order)."""
        return self.email or self.username or "unleash_system_user"

    # --- the principal interface shared with API tokens -----------------------------------
    @property
    def is_admin_api_principal(self) -> bool:
        return self.is_active

    @property
    def is_staff(self) -> bool:
        return self.is_active and self.has_permission(perms.ADMIN)

    @property
    def is_superuser(self) -> bool:
        return self.is_staff

    def has_perm(self, perm: str, obj: object = None) -> bool:
        return self.is_staff

    def has_module_perms(self, app_label: str) -> bool:
        return self.is_staff

    def root_permissions(self) -> set[str]:
        """Permissions from the user's root role and the root roles of the user's groups."""
        if not self.pk:
            return set()
        cache = getattr(self, "_root_permissions", None)
        if cache is None:
            roles = Role.objects.filter(
                models.Q(users=self) | models.Q(root_groups__memberships__user=self)
            ).distinct()
            cache = set()
            for role in roles:
                cache.update(role.permissions)
            self._root_permissions = cache
        return cache

    def project_permissions(self, project_id: str) -> set[str]:
        """Permissions from project roles held in `project_id`, directly or through a group."""
        if not self.pk:
            return set()
        roles = Role.objects.filter(
            models.Q(project_assignments__project_id=project_id)
            & (
                models.Q(project_assignments__user=self)
                | models.Q(project_assignments__group__memberships__user=self)
            )
        ).distinct()
        found: set[str] = set()
        for role in roles:
            found.update(role.permissions)
        return found

    def has_permission(self, permission: str, project_id: str | None = None) -> bool:
        granted = self.root_permissions()
        if perms.ADMIN in granted or permission in granted:
            return True
        if permission == perms.NONE:
            return True
        if project_id is not None and permission in perms.PROJECT_PERMISSIONS:
            return permission in self.project_permissions(project_id)
        return False


class TokenType(models.TextChoices):
    ADMIN = "admin", "Admin"
    CLIENT = "client", "Client"
    # For browser and mobile apps on /api/frontend only (Unleash's frontend tokens).
    FRONTEND = "frontend", "Frontend"
    PERSONAL = "personal", "Personal (acts as its user)"


class ApiToken(models.Model):
    """An API token. Only the SHA-256 digest of the secret is stored, never the token itself.

    Tokens are random 256-bit values (or operator-chosen bootstrap values), so a plain SHA-256
    is enough to make a leaked table useless, and it survives a SECRET_KEY rotation.
    """

    name = models.CharField(max_length=255)
    type = models.CharField(max_length=16, choices=TokenType.choices)
    # The part before the secret, kept in clear to tell tokens apart: `*:*`, `default:development`,
    # `user`. It carries no secret.
    prefix = models.CharField(max_length=255)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    user = models.ForeignKey(
        User, on_delete=models.CASCADE, null=True, blank=True, related_name="api_tokens"
    )
    project = models.CharField(max_length=255, default="*")
    environment = models.CharField(max_length=255, default="*")
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=255, blank=True, default="")

    class Meta:
        ordering = ["id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}.…)"

    @staticmethod
    def digest_of(token: str) -> str:
        return hashlib.sha256(token.encode("utf-8")).hexdigest()

    @property
    def is_usable(self) -> bool:
        now = timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class AuditEvent(models.Model):
    """One thing that happened, written in the same transaction as the change it describes."""

    type = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.CharField(max_length=255)
    created_by_user_id = models.BigIntegerField(null=True, blank=True)
    token = models.ForeignKey(
        ApiToken, on_delete=models.SET_NULL, null=True, blank=True, related_name="events"
    )
    project = models.CharField(max_length=255, null=True, blank=True)
    feature_name = models.CharField(max_length=255, null=True, blank=True)
    environment = models.CharField(max_length=255, null=True, blank=True)
    data = models.JSONField(null=True, blank=True)
    pre_data = models.JSONField(null=True, blank=True)
    tags = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # A flag's events, newest first (its page in the admin, its collaborators, and the
            # activity trigger's newest event of a new flag: names are unique across projects).
            models.Index(fields=["feature_name", "-created_at"], name="audit_feature"),
            # A project's `lastUpdatedAt`: the newest event about any flag of the project.
            models.Index(
                models.F("project"),
                models.F("created_at").desc(),
                name="audit_flag_event_newest",
                condition=models.Q(feature_name__isnull=False),
            ),
            models.Index(fields=["-created_at"], name="audit_created"),
            # A project's events, newest first (`/api/admin/events?project=`).
            models.Index(fields=["project", "-created_at"], name="audit_project"),
            # The admin's audit log filtered by actor (the recorded label) and by event type
            # (the type filter's choices read this index too), newest first.
            models.Index(fields=["created_by", "-created_at"], name="audit_actor"),
            models.Index(fields=["type", "-created_at"], name="audit_type"),
            # GET /api/admin/search/events?createdBy=: a user's events, newest first. Its text
            # search has a trigram index on PostgreSQL (migration 0012, docs/search.md).
            models.Index(fields=["created_by_user_id", "-created_at"], name="audit_user"),
        ]

    def __str__(self) -> str:
        return f"{self.type} by {self.created_by}"
