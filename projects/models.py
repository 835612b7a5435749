"""Projects, environments, and who holds which project role."""

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from flagadmin.core.models import Role
from groups.models import Group


class EnvironmentType(models.TextChoices):
    DEVELOPMENT = "development", "Development"
    TEST = "test", "Test"
    PREPRODUCTION = "preproduction", "Pre-production"
    PRODUCTION = "production", "Production"


class Environment(models.Model):
    name = models.CharField(max_length=100, primary_key=True)
    type = models.CharField(max_length=32, choices=EnvironmentType.choices)
    sort_order = models.IntegerField(default=9999)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["sort_order", "name"]

    def __str__(self) -> str:
        return self.name


class ProjectMode(models.TextChoices):
    OPEN = "open", "Open"
    PROTECTED = "protected", "Protected"
    PRIVATE = "private", "Private"


class Project(models.Model):
    id = models.CharField(max_length=100, primary_key=True)
    name = models.CharField(max_length=255)
    description = models.TextField(null=True, blank=True)
    mode = models.CharField(max_length=16, choices=ProjectMode.choices, default=ProjectMode.OPEN)
    default_stickiness = models.CharField(max_length=100, default="default")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(null=True, blank=True)
    archived_at = models.DateTimeField(null=True, blank=True)
    environments = models.ManyToManyField(
        Environment, through="ProjectEnvironment", related_name="projects"
    )

    class Meta:
        # The list's order, the same on SQLite and PostgreSQL whatever the collation.
        ordering = [Lower("name"), "id"]
        indexes = [
            models.Index(Lower("name"), "id", name="project_name_ci"),
            models.Index(fields=["archived_at"], name="project_archived_at"),
        ]

    def __str__(self) -> str:
        return self.name


class ProjectEnvironment(models.Model):
    """An environment enabled in a project: new flags get one entry per such environment."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="project_environments"
    )
    environment = models.ForeignKey(
        Environment, on_delete=models.CASCADE, related_name="project_environments"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "environment"], name="project_environment_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}/{self.environment_id}"


class ProjectRoleAssignment(models.Model):
    """A project role (Owner, Member, custom) held by a user or by a group in one project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="role_assignments")
    role = models.ForeignKey(Role, on_delete=models.CASCADE, related_name="project_assignments")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="project_assignments",
    )
    group = models.ForeignKey(
        Group,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="project_assignments",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(user__isnull=False, group__isnull=True)
                    | models.Q(user__isnull=True, group__isnull=False)
                ),
                name="project_role_user_xor_group",
            ),
            models.UniqueConstraint(
                fields=["project", "role", "user"],
                condition=models.Q(user__isnull=False),
                name="project_role_user_unique",
            ),
            models.UniqueConstraint(
                fields=["project", "role", "group"],
                condition=models.Q(group__isnull=False),
                name="project_role_group_unique",
            ),
        ]
        indexes = [
            models.Index(fields=["project", "role"], name="project_role_project_role"),
            models.Index(fields=["user"], name="project_role_user"),
            models.Index(fields=["group"], name="project_role_group"),
        ]

    def __str__(self) -> str:
        holder = self.user or self.group
        return f"{holder} is {self.role} of {self.project_id}"


class FavoriteProject(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="favorite_projects"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="favorites")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="favorite_project_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} ♥ {self.project_id}"


class ProjectMember(models.Model):
    """A user who holds a project role in a project (`memberCount`), with the number of
    assignments that make them one (`paths`: their own roles and their groups' roles).

    Kept by the database itself (`flagadmin.core.derived.members`): triggers on role assignments,
    group memberships and role types add and remove paths in the same transaction as the write,
    whatever makes it; a user is a member while they have a path. Plain ids rather than
    foreign keys: only the triggers write these rows, also while Django deletes the rows
    they follow."""

    project_id = models.CharField(max_length=100)
    user_id = models.BigIntegerField()
    paths = models.IntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project_id", "user_id"], name="project_member_unique")
        ]

    def __str__(self) -> str:
        return f"user {self.user_id} in {self.project_id} ({self.paths})"


class ProjectMemberCount(models.Model):
    """How many members a project has: the rows of `ProjectMember`, counted by the same
    triggers, so that the projects list reads one row per project."""

    project = models.OneToOneField(
        Project, on_delete=models.CASCADE, primary_key=True, related_name="member_total"
    )
    total = models.IntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.project_id}: {self.total}"


# The `ProjectListVersion` row whose version is drawn anew when any user's or group's name
# changes (the owners an entry of the list shows); no project has this id.
OWNER_NAMES = ""


class ProjectListVersion(models.Model):
    """A random value the database draws anew, in the writing transaction, whenever anything that a
    project's entry in the projects list shows changes: the project's row, its member count, its
    Owner assignments (triggers declared in `flagadmin.core.derived.list_versions`), its flag
    counts, its flag activity and its flags' creation times (the same module's flag side); and, in
    the row `OWNER_NAMES`, whenever a user's or a group's name changes. While a project's version
    and the names' version are the same, its entry is the same, up to the time at which one of its
    flags outlives its type's lifetime; the list keeps each entry, encoded, per process
    (`overview.project_figures`). Random rather than counted, so that a value never comes back after
    a restore or a failover, nor after a rollback."""

    # A plain column, not a foreign key: the rows are the triggers' alone (made with the
    # project, dropped with it), and Django's delete then needs no query for them.
    project_id = models.CharField(max_length=100, primary_key=True)
    version = models.CharField(max_length=36)

    def __str__(self) -> str:
        return f"{self.project_id}: {self.version}"
