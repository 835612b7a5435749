"""Small helpers for the certificate and key texts people paste into the SAML settings.

Identity providers hand out certificates as bare base64 (the content of `<X509Certificate>`,
often wrapped over several lines) or as PEM with `-----BEGIN CERTIFICATE-----` armour; both are
accepted and stored as sent. These helpers normalise them for pysaml2 and describe them without
showing them (fingerprints, shortened forms).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

from cryptography.hazmat.primitives import serialization

_ARMOUR = re.compile(r"-----(BEGIN|END)[^-]*-----")


def certificate_body(text: str) -> str:
    """The base64 body of a certificate: PEM armour and all whitespace removed."""
    return "".join(_ARMOUR.sub("", text).split())


def certificate_fingerprint(text: str) -> str:
    """SHA-256 fingerprint of the certificate (of its DER bytes when the body is base64, as
    `openssl x509 -fingerprint -sha256` shows it; of the text otherwise)."""
    body = certificate_body(text)
    try:
        raw = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        raw = text.encode("utf-8")
    digest = hashlib.sha256(raw).hexdigest().upper()
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))


def shorten(text: str | None, keep: int = 12) -> str:
    """`MIIC8DCCAdig…Ww==` (1,012 characters): enough to recognise a value, not to copy it."""
    if not text:
        return "—"
    body = certificate_body(text)
    if len(body) <= 2 * keep:
        return body
    return f"{body[:keep]}…{body[-keep:]} ({len(body):,} characters)"


def private_key_pem(text: str) -> bytes | None:
    """The private key as unencrypted PKCS#8 PEM (what pysaml2 reads from its key file), from
    PEM or bare base64 DER; None when the text is not an unencrypted private key."""
    candidates: list[bytes] = []
    if "-----BEGIN" in text:
        candidates.append(text.strip().encode("utf-8"))
    else:
        try:
            candidates.append(base64.b64decode(certificate_body(text), validate=True))
        except (binascii.Error, ValueError):
            return None
    for data in candidates:
        try:
            if data.startswith(b"-----"):
                key = serialization.load_pem_private_key(data, password=None)
            else:
                key = serialization.load_der_private_key(data, password=None)
        except (ValueError, TypeError):
            continue
        return key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    return None


def private_key_fingerprint(text: str | None) -> str | None:
    """SHA-256 of the *public* half of the key (its SubjectPublicKeyInfo DER): tells keys apart
    in the audit log without recording anything secret. None when there is no readable key."""
    if not text:
        return None
    pem = private_key_pem(text)
    if pem is None:
        return None
    key = serialization.load_pem_private_key(pem, password=None)
    spki = key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    digest = hashlib.sha256(spki).hexdigest().upper()
    return ":".join(digest[i : i + 2] for i in range(0, len(digest), 2))
