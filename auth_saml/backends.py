"""The Django authentication backend of SAML sign-in.

djangosaml2's view has already verified the response (signature, audience, destination, time,
InResponseTo) when it calls `authenticate`; the policy (who may sign in, who is created, which
groups they join) is `auth_saml.services.sign_in`.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.http import HttpRequest

from auth_saml import services
from auth_saml.models import SamlSettings
from flagadmin.core.models import User

logger = logging.getLogger(__name__)

# Set on the request when sign-in is refused: the sentence the refusal page shows.
REFUSAL_ATTRIBUTE = "saml_refusal"


class SamlBackend(ModelBackend):
    """djangosaml2's view only calls Django's `authenticate` with the verified session; all of
    `Saml2Backend` that would run is its `authenticate`, replaced here. So this derives from
    `ModelBackend` (as `Saml2Backend` does) and does not import pysaml2: every permission check
    loads the backends, and pysaml2 costs a process ~45 MiB (see `auth_saml.sso_urls`)."""

    def authenticate(
        self,
        request: HttpRequest | None,
        session_info: dict[str, Any] | None = None,
        attribute_mapping: dict[str, Any] | None = None,
        create_unknown_user: bool = True,
        assertion_info: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> User | None:
        if session_info is None or "ava" not in session_info:
            return None  # not a SAML sign-in (e.g. the Django admin's password form)
        saml_settings = SamlSettings.load()
        name_id = session_info.get("name_id")
        assertion_info = assertion_info or {}
        if not saml_settings.sign_in_enabled or session_info.get("issuer") != (
            (saml_settings.entity_id or "").strip()
        ):
            # The settings changed between the response's verification and now.
            return self._refuse(request, "SAML 2.0 sign-in is not enabled for this issuer.")
        result = services.sign_in(
            saml_settings=saml_settings,
            name_id=getattr(name_id, "text", None),
            attributes=session_info["ava"],
            assertion_id=assertion_info.get("assertion_id"),
            assertion_expires_at=_parse_time(assertion_info.get("not_on_or_after")),
        )
        if result.user is None:
            return self._refuse(request, result.refusal or "Sign-in was refused.")
        return result.user

    def user_can_authenticate(self, user: User | None) -> bool:
        return user is not None and user.is_active

    @staticmethod
    def _refuse(request: HttpRequest | None, reason: str) -> None:
        logger.info("SAML sign-in refused: %s", reason)
        if request is not None:
            setattr(request, REFUSAL_ATTRIBUTE, reason)
        return None


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    from saml2.time_util import str_to_time  # only ever reached from a SAML sign-in

    try:
        parsed = str_to_time(value)
    except (ValueError, TypeError, AttributeError):
        return None
    if not parsed:
        return None
    return datetime(*parsed[:6], tzinfo=UTC)
