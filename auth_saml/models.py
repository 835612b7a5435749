"""The instance's SAML 2.0 settings (one row) and the assertions already used to sign in."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from auth_saml.crypto import decrypt_secret, encrypt_secret
from flagadmin.core.models import ROOT_ROLE_TYPES, Role

# The SP private key is write-only: what responses carry in its place, and what a client sends
# back (after a GET, since settings are replaced as a whole) to keep the stored key.
SP_KEY_REDACTED = "[redacted]"


class DefaultRootRole(models.TextChoices):
    VIEWER = "Viewer", "Viewer"
    EDITOR = "Editor", "Editor"
    ADMIN = "Admin", "Admin"


class SamlSettings(models.Model):
    """The settings as last sent to POST /api/admin/auth/saml/settings.

    Stored as sent: a field the client did not send is NULL and is left out of responses.
    The service provider's private key (`spCertificate` on the wire) is stored encrypted.
    """

    SINGLETON_ID = 1

    id = models.PositiveSmallIntegerField(primary_key=True, default=SINGLETON_ID, editable=False)
    enabled = models.BooleanField(default=False)
    entity_id = models.TextField(null=True, blank=True, help_text="The IdP's entity id (issuer).")
    sign_on_url = models.TextField(null=True, blank=True)
    certificate = models.TextField(
        null=True, blank=True, help_text="The IdP's X.509 signing certificate."
    )
    sign_out_url = models.TextField(null=True, blank=True)
    sp_certificate_encrypted = models.TextField(
        null=True,
        blank=True,
        editable=False,
        help_text="The SP's private key (spCertificate), Fernet-encrypted with a key derived "
        "from SECRET_KEY.",
    )
    auto_create = models.BooleanField(null=True, blank=True)
    email_domains = models.TextField(null=True, blank=True)
    default_root_role = models.CharField(
        max_length=16, choices=DefaultRootRole.choices, null=True, blank=True
    )
    default_root_role_id = models.IntegerField(null=True, blank=True)
    enable_group_syncing = models.BooleanField(null=True, blank=True)
    group_json_path = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        verbose_name = "SAML settings"
        verbose_name_plural = "SAML settings"
        constraints = [
            models.CheckConstraint(condition=models.Q(id=1), name="saml_settings_singleton"),
        ]

    def __str__(self) -> str:
        return "SAML 2.0 settings" + ("" if self.enabled else " (disabled)")

    @classmethod
    def load(cls) -> SamlSettings:
        """The stored settings, or unsaved defaults (disabled) when none were ever stored."""
        return cls.objects.filter(pk=cls.SINGLETON_ID).first() or cls()

    # --- the SP private key --------------------------------------------------------------
    @property
    def sp_private_key(self) -> str | None:
        if not self.sp_certificate_encrypted:
            return None
        return decrypt_secret(self.sp_certificate_encrypted)

    @sp_private_key.setter
    def sp_private_key(self, value: str | None) -> None:
        self.sp_certificate_encrypted = encrypt_secret(value) if value is not None else None

    @property
    def sp_private_key_set(self) -> bool:
        return bool(self.sp_certificate_encrypted)

    # --- what sign-in needs ----------------------------------------------------------------
    @property
    def sign_in_enabled(self) -> bool:
        """Enabled, with the three values sign-in cannot work without."""
        return bool(
            self.enabled
            and (self.entity_id or "").strip()
            and (self.sign_on_url or "").strip()
            and (self.certificate or "").strip()
        )

    def allowed_email_domains(self) -> set[str]:
        """`emailDomains` as a set: "@Example.com, b.org" -> {"example.com", "b.org"}."""
        domains = set()
        for item in (self.email_domains or "").split(","):
            domain = item.strip().lstrip("@").strip().lower()
            if domain:
                domains.add(domain)
        return domains

    def email_domain_allowed(self, email: str) -> bool:
        _, _, domain = email.rpartition("@")
        return bool(domain) and domain.strip().lower() in self.allowed_email_domains()

    def root_role_for_new_users(self) -> Role:
        """defaultRootRoleId, else defaultRootRole, else Editor (Unleash's documented order)."""
        root_roles = Role.objects.filter(type__in=ROOT_ROLE_TYPES)
        if self.default_root_role_id is not None:
            role = root_roles.filter(pk=self.default_root_role_id).first()
            if role is not None:
                return role
        if self.default_root_role:
            role = root_roles.filter(name=self.default_root_role).first()
            if role is not None:
                return role
        return Role.objects.get(pk=Role.EDITOR)


class ConsumedAssertion(models.Model):
    """An assertion that has signed someone in, kept until it expires, so that the same
    assertion can never sign in twice (replay), whatever session it is posted from."""

    assertion_id = models.CharField(max_length=255, unique=True)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["expires_at"], name="saml_assertion_expires")]

    def __str__(self) -> str:
        return self.assertion_id
