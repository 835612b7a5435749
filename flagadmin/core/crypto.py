"""Encryption of secrets that must be kept somewhere readable again (the SAML service provider's
private key at rest, a new API token's secret between the admin's POST and the page that shows
it), with keys derived from SECRET_KEY.

Each use names its own purpose, bound into the HKDF derivation, so the same SECRET_KEY yields
unrelated keys for each. SECRET_KEY_FALLBACKS are tried when decrypting, so rotating SECRET_KEY
the Django way (old key moved to the fallbacks) keeps stored values readable.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings


def _fernet_for(secret_key: str, purpose: bytes) -> Fernet:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=purpose).derive(
        secret_key.encode("utf-8")
    )
    return Fernet(base64.urlsafe_b64encode(derived))


def _fernet(purpose: bytes) -> MultiFernet:
    keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([_fernet_for(key, purpose) for key in keys])


def encrypt(plaintext: str, *, purpose: bytes) -> str:
    return _fernet(purpose).encrypt(plaintext.encode("utf-8")).decode("ascii")


def decrypt(token: str, *, purpose: bytes) -> str | None:
    """The plaintext, or None when no current or fallback SECRET_KEY decrypts it."""
    try:
        return _fernet(purpose).decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, ValueError):
        return None
