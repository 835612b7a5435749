"""factory-boy factories for every model the tests build by hand."""

from __future__ import annotations

import factory
from factory.django import DjangoModelFactory

from flagadmin.models import ApiToken, AuditEvent, Role, TokenType, User
from flagadmin.tokens import issue_token


class UserFactory(DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    name = factory.Faker("name")
    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    root_role_id = Role.EDITOR
    password = factory.PostGenerationMethodCall("set_unusable_password")


def make_token(
    token_type: str = TokenType.ADMIN,
    *,
    user: User | None = None,
    name: str | None = None,
    projects: list[str] | None = None,
    environment: str = "development",
    **kwargs,
) -> tuple[ApiToken, str]:
    """A token and its plaintext (factory-boy cannot return the plaintext, which is not stored)."""
    return issue_token(
        name=name or f"{token_type}-token",
        token_type=token_type,
        user=user,
        projects=projects,
        environment=environment,
        **kwargs,
    )


class AuditEventFactory(DjangoModelFactory):
    class Meta:
        model = AuditEvent

    type = "feature-created"
    created_by = "tester@example.com"


# --- groups -----------------------------------------------------------------------------
from groups.models import Group, GroupMembership  # noqa: E402


class GroupFactory(DjangoModelFactory):
    class Meta:
        model = Group

    name = factory.Sequence(lambda n: f"group-{n}")
    created_by = "admin@example.com"


class GroupMembershipFactory(DjangoModelFactory):
    class Meta:
        model = GroupMembership

    group = factory.SubFactory(GroupFactory)
    user = factory.SubFactory(UserFactory)
    created_by = "admin@example.com"


# --- projects ---------------------------------------------------------------------------
from projects.models import (  # noqa: E402
    Environment,
    Project,
    ProjectEnvironment,
    ProjectRoleAssignment,
)


class ProjectFactory(DjangoModelFactory):
    """A project with every existing environment enabled (as POST /api/admin/projects does)."""

    class Meta:
        model = Project
        skip_postgeneration_save = True

    id = factory.Sequence(lambda n: f"project-{n}")
    name = factory.LazyAttribute(lambda p: p.id.replace("-", " ").title())

    @factory.post_generation
    def with_environments(project, create, extracted, **kwargs):
        if create and extracted is not False:
            ProjectEnvironment.objects.bulk_create(
                [
                    ProjectEnvironment(project=project, environment=env)
                    for env in Environment.objects.all()
                ]
            )


class ProjectRoleAssignmentFactory(DjangoModelFactory):
    class Meta:
        model = ProjectRoleAssignment

    project = factory.SubFactory(ProjectFactory)
    role_id = Role.OWNER


# --- features ---------------------------------------------------------------------------
from features.models import Feature, FeatureEnvironment  # noqa: E402


class FeatureFactory(DjangoModelFactory):
    class Meta:
        model = Feature

    name = factory.Sequence(lambda n: f"flag-{n}")
    project_id = "default"


class FeatureEnvironmentFactory(DjangoModelFactory):
    class Meta:
        model = FeatureEnvironment

    feature = factory.SubFactory(FeatureFactory)
    environment_id = "development"
