"""Encryption at rest for the one secret the SAML settings hold: the service provider's private
key (`spCertificate`).

The key is derived from SECRET_KEY with HKDF, so a copy of the database alone does not reveal
the private key. SECRET_KEY_FALLBACKS are tried when decrypting, so rotating SECRET_KEY the Django
way (old key moved to the fallbacks) keeps the stored value readable; the next save re-encrypts it
with the new key.
"""

from __future__ import annotations

import base64
import logging

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

logger = logging.getLogger(__name__)

# Binds the derived key to this one purpose: the same SECRET_KEY yields unrelated keys elsewhere.
_HKDF_INFO = b"flagadmin.auth_saml.sp-private-key.v1"


def _fernet_for(secret_key: str) -> Fernet:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_HKDF_INFO).derive(
        secret_key.encode("utf-8")
    )
    return Fernet(base64.urlsafe_b64encode(derived))


def _fernet() -> MultiFernet:
    keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([_fernet_for(key) for key in keys])


def encrypt_secret(plaintext: str) -> str:
    return _fernet().encrypt(plaintext.encode("utf-8")).decode("ascii")


def decrypt_secret(token: str) -> str | None:
    """The plaintext, or None when no current or fallback SECRET_KEY can decrypt it (the key was
    rotated without keeping the old one): the value is then treated as not set."""
    try:
        return _fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, ValueError):
        logger.warning(
            "The stored SAML spCertificate cannot be decrypted with SECRET_KEY or "
            "SECRET_KEY_FALLBACKS; it is ignored until it is sent again."
        )
        return None
