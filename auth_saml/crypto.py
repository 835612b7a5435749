"""Encryption at rest for the one secret the SAML settings hold: the service provider's private
key (`spCertificate`), with a key derived from SECRET_KEY (flagadmin.core.crypto), so a copy of the
database alone does not reveal it. The next save after a SECRET_KEY rotation re-encrypts it
with the new key.
"""

from __future__ import annotations

import logging

from flagadmin.core import crypto

logger = logging.getLogger(__name__)

# Binds the derived key to this one purpose (unchanged since values were first stored).
_PURPOSE = b"flagadmin.auth_saml.sp-private-key.v1"


def encrypt_secret(plaintext: str) -> str:
    return crypto.encrypt(plaintext, purpose=_PURPOSE)


def decrypt_secret(token: str) -> str | None:
    """The plaintext, or None when no current or fallback SECRET_KEY can decrypt it (the key was
    rotated without keeping the old one): the value is then treated as not set."""
    plaintext = crypto.decrypt(token, purpose=_PURPOSE)
    if plaintext is None:
        logger.warning(
            "The stored SAML spCertificate cannot be decrypted with SECRET_KEY or "
            "SECRET_KEY_FALLBACKS; it is ignored until it is sent again."
        )
    return plaintext
