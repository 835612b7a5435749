"""Business rules of users (people; service accounts are in `flagadmin.core.services`): each write
is one transaction with its audit event, whoever makes it (the admin API, the Django admin, SAML
sign-in)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Q, QuerySet
from django.db.models.functions import Lower

from flagadmin.core.actors import Actor
from flagadmin.core.audit import record_event
from flagadmin.core.db import unique_or_conflict
from flagadmin.core.errors import NameExistsError
from flagadmin.core.models import AccountType, Role, User


def user_created_data(user: User, **extra: Any) -> dict[str, Any]:
    """The data of a `user-created` event, one shape for every way a user is created."""
    return {
        "id": user.pk,
        "name": user.name,
        "email": user.email,
        "username": user.username,
        "rootRole": user.root_role_id,
        **extra,
    }


def listed_users() -> QuerySet[User]:
    """People listed by user-admin: not the system users that tokens act as, and not service
    accounts (which have their own endpoint in Unleash)."""
    return User.objects.exclude(
        account_type__in=[AccountType.SYSTEM, AccountType.SERVICE]
    ).order_by("id")


def _taken_by(*, email: str | None, username: str | None) -> str | None:
    """Which of the two is already used (case-insensitively, also across the two columns,
    because sign-in looks a person up by either), in one query."""
    lowered = [value.lower() for value in (email, username) if value]
    clash = (
        User.objects.annotate(lower_email=Lower("email"), lower_username=Lower("username"))
        .filter(Q(lower_email__in=lowered) | Q(lower_username__in=lowered))
        .values_list("lower_email", "lower_username")
        .first()
    )
    if clash is None:
        return None
    if email and email.lower() in clash:
        return "email"
    return "username"


def _user_taken_error(*, email: str | None, username: str | None) -> NameExistsError | None:
    taken = _taken_by(email=email, username=username)
    return NameExistsError(f"A user with that {taken} already exists") if taken else None


def create_user(
    *,
    actor: Actor,
    email: str | None,
    username: str | None,
    name: str | None,
    root_role: Role,
    password: str | None = None,
    event_extra: dict[str, Any] | None = None,
) -> User:
    """Creates a person who can be given roles and groups; audit event `user-created` (with
    `event_extra` added to its data, e.g. the SAML sign-in's `source`)."""
    event_extra = event_extra or {}
    with transaction.atomic():
        if error := _user_taken_error(email=email, username=username):
            raise error
        user = User(
            email=email,
            username=username,
            name=name,
            root_role=root_role,
            account_type=AccountType.USER,
        )
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        with unique_or_conflict(lambda: _user_taken_error(email=email, username=username)):
            user.save()
        record_event("user-created", actor=actor, data=user_created_data(user, **event_extra))
    return user
