"""factory-boy factories for every model the tests build by hand."""

from __future__ import annotations

import factory
from django.contrib.auth.hashers import make_password
from factory.django import DjangoModelFactory

from definitions.models import ContextField, StrategyDefinition
from flagadmin.core.models import ApiToken, AuditEvent, Role, TokenType, User
from flagadmin.core.tokens import issue_token


class UserFactory(DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    name = factory.Faker("name")
    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    root_role_id = Role.EDITOR
    # Set before the insert: a post-generation call is not saved (skip_postgeneration_save),
    # which left the row's password differing from the object's and broke force_login sessions.
    password = factory.LazyFunction(lambda: make_password(None))  # unusable


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


class RoleFactory(DjangoModelFactory):
    """A custom project role (Unleash's fixed roles are seeded by the migrations)."""

    class Meta:
        model = Role

    name = factory.Sequence(lambda n: f"role-{n}")
    type = "custom"
    permissions = factory.LazyFunction(list)


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
    FavoriteProject,
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


class FavoriteProjectFactory(DjangoModelFactory):
    class Meta:
        model = FavoriteProject

    user = factory.SubFactory(UserFactory)
    project = factory.SubFactory(ProjectFactory)


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


# --- features: tags, strategies, lifecycle, dependencies --------------------------------
from features.models import (  # noqa: E402
    FeatureDependency,
    FeatureLifecycleStage,
    FeatureStrategy,
    FeatureTag,
    Tag,
    TagType,
)


class TagTypeFactory(DjangoModelFactory):
    class Meta:
        model = TagType
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"tagtype-{n}")


class TagFactory(DjangoModelFactory):
    class Meta:
        model = Tag
        django_get_or_create = ("type", "value")

    type = factory.LazyFunction(lambda: TagType.objects.get(name="simple"))
    value = factory.Sequence(lambda n: f"tag-{n}")


class FeatureTagFactory(DjangoModelFactory):
    class Meta:
        model = FeatureTag

    feature = factory.SubFactory(FeatureFactory)
    tag = factory.SubFactory(TagFactory)


class FeatureStrategyFactory(DjangoModelFactory):
    class Meta:
        model = FeatureStrategy

    feature_environment = factory.SubFactory(FeatureEnvironmentFactory)
    name = "flexibleRollout"
    sort_order = factory.Sequence(lambda n: n)
    parameters = factory.LazyFunction(
        lambda: {"rollout": "50", "stickiness": "default", "groupId": "g"}
    )


class FeatureLifecycleStageFactory(DjangoModelFactory):
    class Meta:
        model = FeatureLifecycleStage

    feature = factory.SubFactory(FeatureFactory)
    stage = "initial"


class FeatureDependencyFactory(DjangoModelFactory):
    class Meta:
        model = FeatureDependency

    parent = factory.SubFactory(FeatureFactory)
    child = factory.SubFactory(FeatureFactory)


# --- auth_saml ----------------------------------------------------------------------------
from auth_saml.models import SamlSettings  # noqa: E402


class SamlSettingsFactory(DjangoModelFactory):
    """The instance's SAML settings (one row), enabled, pointing at the test IdP of
    tests/saml_idp.py; pass `certificate=` the IdP's certificate."""

    class Meta:
        model = SamlSettings

    enabled = True
    entity_id = "https://idp.test/metadata"
    sign_on_url = "https://idp.test/sso"
    certificate = "not-a-certificate"


class ContextFieldFactory(DjangoModelFactory):
    """A custom context field (the built-in ones are seeded by the migrations)."""

    class Meta:
        model = ContextField

    name = factory.Sequence(lambda n: f"field{n}")
    description = "A custom field"


class StrategyDefinitionFactory(DjangoModelFactory):
    """A custom strategy type (the built-in ones are seeded by the migrations)."""

    class Meta:
        model = StrategyDefinition

    name = factory.Sequence(lambda n: f"custom{n}")
    parameters = factory.LazyFunction(
        lambda: [{"name": "tenants", "type": "list", "description": "", "required": False}]
    )
