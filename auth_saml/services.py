"""Writes of the auth_saml app: storing the settings, and what a SAML sign-in changes (the user,
its failed-attempt counter, its SSO group memberships), each in one transaction with its audit
events."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.db.models.functions import Lower
from django.utils import timezone

from auth_saml.certificates import certificate_fingerprint, private_key_fingerprint
from auth_saml.models import SP_KEY_REDACTED, ConsumedAssertion, SamlSettings
from flagadmin.core.actors import Actor
from flagadmin.core.audit import record_event
from flagadmin.core.locks import members_write
from flagadmin.core.models import AccountType, User
from groups.models import Group, GroupMembership
from groups.services import record_member_added, record_member_removed
from users.services import create_user

logger = logging.getLogger(__name__)

# Unleash's key for these settings; audit events carry it as `data.id`.
SETTINGS_ID = "unleash.enterprise.auth.saml"
# `created_by` of memberships that sign-in adds: only those are ever removed by syncing.
SSO_MEMBERSHIP_CREATOR = "saml"
# The clock tolerance of sign-in (seconds), also how long past expiry used assertions are kept.
CLOCK_TOLERANCE_SECONDS = 60

# The columns a POST replaces (a field that was not sent becomes NULL: stored as sent).
STORED_FIELDS = (
    "enabled",
    "entity_id",
    "sign_on_url",
    "certificate",
    "sign_out_url",
    "auto_create",
    "email_domains",
    "default_root_role",
    "default_root_role_id",
    "enable_group_syncing",
    "group_json_path",
)


# --- the settings ----------------------------------------------------------------------------


def settings_audit_data(saml_settings: SamlSettings) -> dict[str, Any]:
    """What audit events record about the settings: every field but the certificate and the
    key, which are represented by their SHA-256 fingerprints (the key's is of its public half)."""
    data: dict[str, Any] = {"id": SETTINGS_ID}
    for field in STORED_FIELDS:
        value = getattr(saml_settings, field)
        if value is not None and field != "certificate":
            data[_camel(field)] = value
    if saml_settings.certificate:
        data["certificateFingerprint"] = certificate_fingerprint(saml_settings.certificate)
    data["spCertificateSet"] = saml_settings.sp_private_key_set
    fingerprint = private_key_fingerprint(saml_settings.sp_private_key)
    if fingerprint:
        data["spCertificateFingerprint"] = fingerprint
    return data


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def store_saml_settings(*, values: Mapping[str, Any], actor: Actor) -> SamlSettings:
    """Replace the settings with `values` (validated, snake_case; `sp_private_key` for the
    key) and record `setting-created` (first time) or `setting-updated`."""
    now = timezone.now()
    with transaction.atomic():
        previous = SamlSettings.objects.select_for_update().filter(pk=SamlSettings.SINGLETON_ID)
        previous = previous.first()
        stored = SamlSettings(
            created_at=previous.created_at if previous else now,
            updated_at=now,
        )
        for field in STORED_FIELDS:
            setattr(stored, field, values.get(field))
        stored.enabled = bool(values.get("enabled"))
        if values.get("sp_private_key") == SP_KEY_REDACTED:
            # The marker of a GET sent back: keep the stored key (still encrypted).
            kept = previous.sp_certificate_encrypted if previous else None
            stored.sp_certificate_encrypted = kept
        else:
            stored.sp_private_key = values.get("sp_private_key")
        if previous is None:
            try:
                with transaction.atomic():  # savepoint: two first saves may race
                    stored.save(force_insert=True)
            except IntegrityError:
                previous = SamlSettings.objects.select_for_update().get(
                    pk=SamlSettings.SINGLETON_ID
                )
                stored.created_at = previous.created_at
                stored.save(force_update=True)
        else:
            stored.save(force_update=True)
        data = settings_audit_data(stored)
        if previous is None:
            record_event("setting-created", actor=actor, data=data)
        else:
            record_event(
                "setting-updated", actor=actor, data=data, pre_data=settings_audit_data(previous)
            )
    return stored


# --- sign-in ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SignInResult:
    """Either a signed-in user, or the reason sign-in was refused (shown to the person)."""

    user: User | None = None
    refusal: str | None = None


# Attributes that carry a person's display name, in order of preference (Okta's documented
# names, the SAML/LDAP ones, and Microsoft Entra ID's claim URIs).
_NAME_ATTRIBUTES = (
    "displayName",
    "name",
    "http://schemas.microsoft.com/identity/claims/displayname",
)
_GIVEN_NAME_ATTRIBUTES = (
    "firstName",
    "givenName",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname",
)
_SURNAME_ATTRIBUTES = (
    "lastName",
    "surname",
    "sn",
    "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname",
)


def _first(attributes: Mapping[str, Sequence[str]], names: Sequence[str]) -> str:
    for name in names:
        for value in attributes.get(name) or []:
            if isinstance(value, str) and value.strip():
                return value.strip()
    return ""


def display_name_from(attributes: Mapping[str, Sequence[str]]) -> str:
    name = _first(attributes, _NAME_ATTRIBUTES)
    if name:
        return name
    parts = [_first(attributes, _GIVEN_NAME_ATTRIBUTES), _first(attributes, _SURNAME_ATTRIBUTES)]
    return " ".join(part for part in parts if part)


def read_idp_groups(attributes: Mapping[str, Any], path: str | None) -> list[str] | None:
    """The group names the assertion carries under `groupJsonPath`, or None when the assertion
    has no such attribute.

    The attribute whose name is exactly `path` wins (claim URIs such as
    `http://schemas.microsoft.com/ws/2008/06/identity/claims/groups` contain dots). Otherwise
    `path` is walked as dotted keys: the longest leading part that names an attribute, then the
    rest inside its values read as JSON objects (e.g. `profile.groups` with a `profile`
    attribute whose value is `{"groups": ["a", "b"]}`).
    """
    path = (path or "").strip()
    if not path:
        return None
    if path in attributes:
        return _as_group_list(attributes[path])
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:split])
        if name not in attributes:
            continue
        found: list[str] = []
        matched = False
        for value in _as_list(attributes[name]):
            ok, inner = _walk(_maybe_json(value), parts[split:])
            if ok:
                matched = True
                found.extend(_as_group_list(inner))
        return found if matched else None
    return None


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _walk(value: Any, keys: Sequence[str]) -> tuple[bool, Any]:
    for key in keys:
        value = _maybe_json(value)
        if isinstance(value, Mapping) and key in value:
            value = value[key]
        else:
            return False, None
    return True, value


def _as_group_list(value: Any) -> list[str]:
    groups: list[str] = []
    for item in _as_list(_maybe_json(value)):
        item = _maybe_json(item)
        if isinstance(item, list):
            groups.extend(str(sub) for sub in item if sub is not None and str(sub) != "")
        elif item is not None and str(item) != "":
            groups.append(str(item))
    return groups


def sync_sso_groups(*, user: User, idp_groups: Sequence[str]) -> tuple[list[Group], list[Group]]:
    """Make the user's SSO memberships match `idp_groups`; returns (joined, left).

    The user joins every group whose `mappings_sso` names one of `idp_groups` and leaves the
    groups that sign-in had added and that no longer match. Memberships added by hand are never
    touched (the fix of Unleash issue 4929). One audit event per membership added or removed.
    """
    wanted_names = set(idp_groups)
    with members_write() as members:  # (the sign-in's own when it syncs: re-entrant)
        # Filtered in Python: JSON containment is not portable to SQLite, and groups with SSO
        # mappings are few. One query for the groups, one for the user's memberships.
        mapped = [
            group
            for group in Group.objects.exclude(mappings_sso=[]).only("id", "name", "mappings_sso")
            if isinstance(group.mappings_sso, list) and wanted_names & set(group.mappings_sso)
        ]
        memberships = {
            m.group_id: m for m in GroupMembership.objects.filter(user=user).select_related("group")
        }
        wanted_ids = {group.id for group in mapped}
        stale = [m for m in memberships.values() if m.added_by_sso and m.group_id not in wanted_ids]
        # The groups to join or leave are held: one deleted before is left alone, its
        # memberships gone with it.
        held = members.hold(
            Group,
            [group.id for group in mapped if group.id not in memberships]
            + [membership.group_id for membership in stale],
        )
        joined: list[Group] = []
        for group in mapped:
            if group.id in memberships or group.id not in held:
                continue  # already a member (by hand or by an earlier sign-in), or deleted
            try:
                with transaction.atomic():  # savepoint: a concurrent sign-in may add it first
                    GroupMembership.objects.create(
                        group=group, user=user, created_by=SSO_MEMBERSHIP_CREATOR, added_by_sso=True
                    )
            except IntegrityError:
                continue
            joined.append(group)
            record_member_added(group.id, user.pk, actor=None)
        stale = [membership for membership in stale if membership.group_id in held]
        left: list[Group] = []
        if stale:
            GroupMembership.objects.filter(pk__in=[m.pk for m in stale]).delete()
            for membership in stale:
                left.append(membership.group)
                record_member_removed(membership.group_id, user.pk, actor=None)
    return joined, left


def _looks_like_email(value: str) -> bool:
    local, at, domain = value.rpartition("@")
    return bool(at and local and domain and " " not in value)


def _consume_assertion(assertion_id: str | None, expires_at: datetime | None) -> bool:
    """Record that this assertion was used; False when it already was (a replay)."""
    if not assertion_id:
        return True
    now = timezone.now()
    tolerance = timedelta(seconds=CLOCK_TOLERANCE_SECONDS)
    ConsumedAssertion.objects.filter(expires_at__lt=now - tolerance).delete()
    try:
        with transaction.atomic():
            ConsumedAssertion.objects.create(
                assertion_id=assertion_id[:255],
                expires_at=(expires_at or now + timedelta(hours=1)) + tolerance,
            )
    except IntegrityError:
        return False
    return True


def users_with_email(email: str) -> QuerySet[User]:
    """Users by email, case-insensitively, through the unique index on LOWER(email) (which
    `email__iexact` would not use on PostgreSQL: it compiles to UPPER())."""
    return User.objects.alias(email_lower=Lower("email")).filter(email_lower=email.strip().lower())


def count_failed_sign_in(email: str | None) -> None:
    """One more failed attempt for the user with this email, if there is one."""
    if email:
        users_with_email(email).update(login_attempts=F("login_attempts") + 1)


def sign_in(
    *,
    saml_settings: SamlSettings,
    name_id: str | None,
    attributes: Mapping[str, Sequence[Any]],
    assertion_id: str | None = None,
    assertion_expires_at: datetime | None = None,
) -> SignInResult:
    """Decide who a verified assertion signs in, and record it.

    An existing user (email, case-insensitive) signs in; an unknown one is created only when
    `autoCreate` is on and the email's domain is listed in `emailDomains`. Success updates
    `seen_at`, resets `login_attempts` and syncs SSO groups; a refusal of a known user counts
    in its `login_attempts`. The caller has verified signature, audience, time and
    InResponseTo; this refuses the same assertion a second time whatever session it comes from.
    """
    email = (name_id or "").strip()
    if not _looks_like_email(email):
        return SignInResult(
            refusal="The identity provider did not send an email address as the user's NameID. "
            "Ask your administrator to configure the NameID format as the email address."
        )
    # A write of members (group sync changes them, and the admin's delete of a person is one
    # too): the members' lock before the person's row.
    with members_write():
        if not _consume_assertion(assertion_id, assertion_expires_at):
            count_failed_sign_in(email)
            return SignInResult(
                refusal="This sign-in response has already been used. Please sign in again."
            )
        # NO KEY: see groups.services._locked.
        user = users_with_email(email).select_for_update(no_key=True).first()
        created = False
        if user is None:
            refusal = _auto_create_refusal(saml_settings, email)
            if refusal:
                return SignInResult(refusal=refusal)
            user, created = _create_user_once(email, attributes, saml_settings)
        elif not user.is_active or user.account_type != AccountType.USER:
            count_failed_sign_in(email)
            return SignInResult(
                refusal=f"The account {email} is disabled or cannot sign in. "
                "Ask an administrator of this instance."
            )
        _record_sign_in(user, attributes, created=created)
        if saml_settings.enable_group_syncing:
            _sync_groups_of_assertion(user, attributes, saml_settings, email)
    return SignInResult(user=user)


def _auto_create_refusal(saml_settings: SamlSettings, email: str) -> str | None:
    """Why no account is created for this unknown email, or None when one is."""
    if not saml_settings.auto_create:
        return (
            f"There is no account for {email} on this instance, and accounts "
            "are not created automatically. Ask an administrator to invite you."
        )
    if not saml_settings.email_domain_allowed(email):
        return (
            f"Accounts are not created automatically for {email}: its domain "
            "is not one of the allowed email domains. Ask an administrator."
        )
    return None


def _create_user_once(
    email: str, attributes: Mapping[str, Sequence[Any]], saml_settings: SamlSettings
) -> tuple[User, bool]:
    """The new user, and True; or, when the same person's concurrent sign-in created it first,
    that user and False."""
    try:
        with transaction.atomic():  # savepoint: the losing insert fails alone
            user = _create_user(email=email.lower(), attributes=attributes, saml=saml_settings)
        return user, True
    except IntegrityError:
        return users_with_email(email).get(), False


def _record_sign_in(user: User, attributes: Mapping[str, Sequence[Any]], *, created: bool) -> None:
    """Seen now, no failed attempts, and a name from the assertion when the user has none."""
    user.seen_at = timezone.now()
    user.login_attempts = 0
    update_fields = ["seen_at", "login_attempts"]
    if not user.name:
        name = display_name_from(attributes)
        if name:
            user.name = name
            update_fields.append("name")
    if not created:
        user.save(update_fields=update_fields)
    else:
        user.save()


def _sync_groups_of_assertion(
    user: User, attributes: Mapping[str, Sequence[Any]], saml_settings: SamlSettings, email: str
) -> None:
    """The user's SSO memberships made those the assertion names; left alone (and logged) when
    the assertion has no group attribute at all."""
    groups = read_idp_groups(attributes, saml_settings.group_json_path)
    if groups is None:
        logger.info(
            "SAML group syncing: the assertion for %s has no attribute %r; "
            "memberships left unchanged",
            email,
            saml_settings.group_json_path,
        )
        return
    sync_sso_groups(user=user, idp_groups=groups)


def _create_user(
    *, email: str, attributes: Mapping[str, Sequence[Any]], saml: SamlSettings
) -> User:
    return create_user(
        actor=None,
        email=email,
        username=None,
        name=display_name_from(attributes) or None,
        root_role=saml.root_role_for_new_users(),
        event_extra={"source": "saml"},
    )
