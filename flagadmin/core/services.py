"""Writes of the core: API tokens and service accounts, each with its audit event.

Every function runs in one transaction and records its event in it. Plaintext tokens are
returned to the caller to show once; they are never stored, logged or put in an event.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Protocol

from django.core.exceptions import ImproperlyConfigured
from django.db import transaction

from flagadmin.core.actors import Actor
from flagadmin.core.audit import record_event
from flagadmin.core.db import unique_or_conflict
from flagadmin.core.errors import NameExistsError
from flagadmin.core.models import AccountType, ApiToken, Role, TokenType, User
from flagadmin.core.times import api_timestamp
from flagadmin.core.tokens import SCOPED_TYPES, issue_token

ALL = "*"


class TokenScopeChecks(Protocol):
    """What a token's scope may name is known to the projects app, which sits above the core: it
    registers these checks when it loads (`projects.apps`), so the core asks without importing
    upward."""

    def unknown_projects(self, project_ids: Iterable[str]) -> set[str]: ...

    def environment_exists(self, name: str) -> bool: ...


_scope_checks: TokenScopeChecks | None = None


def register_token_scope_checks(checks: TokenScopeChecks) -> None:
    global _scope_checks
    _scope_checks = checks


def _registered_scope_checks() -> TokenScopeChecks:
    if _scope_checks is None:
        raise ImproperlyConfigured("The projects app registers the token scope checks; install it")
    return _scope_checks


def unknown_projects(project_ids: list[str]) -> list[str]:
    """The ids in `project_ids` (other than `*`) that name no project, in the order given."""
    wanted = {p for p in project_ids if p != ALL}
    if not wanted:
        return []
    missing = _registered_scope_checks().unknown_projects(wanted)
    return [p for p in project_ids if p in missing]


def environment_exists(name: str) -> bool:
    return _registered_scope_checks().environment_exists(name)


def token_event_data(token: ApiToken) -> dict:
    # What the token can reach, never its secret or digest.
    return {
        "id": token.pk,
        "tokenName": token.name,
        "type": token.type,
        "projects": token.project.split(","),
        "environment": token.environment,
        "expiresAt": api_timestamp(token.expires_at),
    }


def record_token_created(token: ApiToken, *, actor: Actor) -> None:
    """`api-token-created`, for every way a token is issued (the API and the Django admin)."""
    record_event("api-token-created", actor=actor, data=token_event_data(token))


def create_api_token(
    *,
    actor: Actor,
    name: str,
    token_type: str,
    projects: list[str] | None = None,
    environment: str = ALL,
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    """Issue an admin or client token (scope already validated by the caller)."""
    actor_name = actor.audit_name if actor is not None else ""
    with transaction.atomic():
        token, plaintext = issue_token(
            name=name,
            token_type=token_type,
            projects=projects if token_type in SCOPED_TYPES else None,
            environment=environment,
            expires_at=expires_at,
            created_by=actor_name,
        )
        record_token_created(token, actor=actor)
    return token, plaintext


# --- Changing and deleting API tokens ------------------------------------------------------
# The admin API names a token by its whole secret (as Unleash does); only digests are stored, so
# the token is found by the digest of what was sent, and the secret goes no further than that.


def managed_token(secret: str) -> ApiToken | None:
    """The admin, client or frontend token whose secret is `secret`; None for anything else
    (unknown, revoked, a personal token), which the callers treat alike."""
    return (
        ApiToken.objects.filter(
            digest=ApiToken.digest_of(secret),
            type__in=[TokenType.ADMIN, TokenType.CLIENT, TokenType.FRONTEND],
            revoked_at__isnull=True,
        )
        .order_by()
        .first()
    )


def _token_event_scope(token: ApiToken) -> dict:
    # Unleash files token events under the token's `project` (one id, `*`, or `[]` for several)
    # and environment.
    projects = token.project.split(",")
    return {
        "project": projects[0] if len(projects) == 1 else "[]",
        "environment": token.environment,
    }


def update_api_token_expiry(*, actor: Actor, token: ApiToken, expires_at: datetime) -> ApiToken:
    """A new expiry; one in the past ends the token from the next request (as Unleash allows)."""
    with transaction.atomic():
        before = token_event_data(token)
        token.expires_at = expires_at
        token.save(update_fields=["expires_at"])
        record_event(
            "api-token-updated",
            actor=actor,
            data=token_event_data(token),
            pre_data=before,
            **_token_event_scope(token),
        )
    return token


def delete_api_token(*, actor: Actor, token: ApiToken) -> None:
    """Delete the row: the next request presenting the token finds nothing (the client API's
    per-worker reuse of a lookup ends within CLIENT_API_REUSE_SECONDS)."""
    with transaction.atomic():
        # Recorded first: a token deleting itself is the event's actor, and the deletion then
        # clears that reference (AuditEvent.token is SET_NULL) with the others.
        record_event(
            "api-token-deleted",
            actor=actor,
            pre_data=token_event_data(token),
            **_token_event_scope(token),
        )
        token.delete()


def _username_taken_error(username: str) -> NameExistsError | None:
    if User.objects.filter(username__iexact=username).exists():
        return NameExistsError("A user with that username already exists")
    return None


def create_service_account(*, actor: Actor, username: str, name: str, root_role: Role) -> User:
    """A user that acts only through its tokens: no password, no email, so it cannot sign in."""
    if error := _username_taken_error(username):
        raise error
    with transaction.atomic():
        account = User(
            username=username,
            name=name,
            root_role=root_role,
            account_type=AccountType.SERVICE,
        )
        account.set_unusable_password()
        with unique_or_conflict(lambda: _username_taken_error(username)):
            account.save()
        record_event(
            "service-account-created",
            actor=actor,
            data={"id": account.pk, "username": username, "name": name, "rootRole": root_role.pk},
        )
    return account


def create_service_account_token(
    *, actor: Actor, account: User, description: str, expires_at: datetime | None
) -> tuple[ApiToken, str]:
    """A personal token of `account`: it acts with the account's root role."""
    with transaction.atomic():
        token, plaintext = issue_token(
            name=description,
            token_type=TokenType.PERSONAL,
            user=account,
            expires_at=expires_at,
            created_by=actor.audit_name if actor is not None else "",
        )
        record_event(
            "service-account-token-created",
            actor=actor,
            data={
                "id": token.pk,
                "description": description,
                "userId": account.pk,
                "expiresAt": api_timestamp(expires_at),
            },
        )
    return token, plaintext
