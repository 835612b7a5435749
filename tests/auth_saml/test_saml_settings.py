"""POST/GET /api/admin/auth/saml/settings (contract section 2)."""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from auth_saml.crypto import decrypt_secret, encrypt_secret
from auth_saml.models import SamlSettings
from flagadmin.core.models import AuditEvent
from tests.conftest import assert_error

URL = "/api/admin/auth/saml/settings"
CERT = (
    "MIIC8DCCAdigAwIBAgIQbWVyZ2VkLWNlcnQtZm9yLXRlc3RzMA0GCSqGSIb3DQEBCwUAMDQxMjAwBgNVBAMT\n"
    "KU1pY3Jvc29mdCBBenVyZSBGZWRlcmF0ZWQgU1NPIENlcnRpZmljYXRlMB4XDTI0MDEwMTAwMDAwMFoX"
)
ENABLED = {
    "enabled": True,
    "entityId": "https://idp.example.com/metadata",
    "signOnUrl": "https://idp.example.com/sso",
    "certificate": CERT,
}


@pytest.fixture(scope="module")
def sp_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def post(client, body, **kwargs):
    return client.post(URL, data=json.dumps(body), content_type="application/json", **kwargs)


# --- GET ---------------------------------------------------------------------------------------


def test_get_saml_settings__none_stored__enabled_false(admin_client):
    response = admin_client.get(URL)

    assert response.status_code == 200
    assert response.json() == {"enabled": False}


def test_get_saml_settings__after_post__returns_stored_settings(admin_client, sp_key_pem):
    post(admin_client, {**ENABLED, "spCertificate": sp_key_pem, "autoCreate": True})

    response = admin_client.get(URL)

    assert response.status_code == 200
    assert response.json() == {**ENABLED, "autoCreate": True, "spCertificate": "[redacted]"}


# --- POST: the two variants ----------------------------------------------------------------------

FULL_OPTIONALS = {
    "signOutUrl": "https://idp.example.com/slo",
    "autoCreate": True,
    "emailDomains": "example.com, @Example.org",
    "defaultRootRole": "Viewer",
    "defaultRootRoleId": 1,
    "enableGroupSyncing": True,
    "groupJsonPath": "groups",
}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(ENABLED, {**ENABLED}, id="enabled-minimal"),
        pytest.param(
            {**ENABLED, **FULL_OPTIONALS},
            {**ENABLED, **FULL_OPTIONALS},
            id="enabled-every-field",
        ),
        pytest.param({"enabled": False}, {"enabled": False}, id="disabled-minimal"),
        pytest.param(
            # What Unleash's Go client sends to disable SAML.
            {"enabled": False, "entityId": " ", "signOnUrl": " ", "certificate": " "},
            {
                "enabled": False,
                "entityId": " ",
                "signOnUrl": " ",
                "certificate": " ",
            },
            id="disabled-blank-fields",
        ),
        pytest.param(
            {**ENABLED, **FULL_OPTIONALS, "enabled": False},
            {**ENABLED, **FULL_OPTIONALS, "enabled": False},
            id="disabled-every-field",
        ),
        pytest.param(
            {**ENABLED, "defaultRootRoleId": 2.0, "signOutUrl": ""},
            {**ENABLED, "defaultRootRoleId": 2, "signOutUrl": ""},
            id="integral-number-role-id",
        ),
        pytest.param(
            {**ENABLED, "unleashHostname": "x", "addGroupsScope": True},
            {**ENABLED},
            id="unknown-fields-ignored",
        ),
    ],
)
def test_set_saml_settings__valid__200_stored_as_sent(admin_client, body, expected):
    response = post(admin_client, body)

    assert response.status_code == 200, response.content
    assert response.json() == expected
    assert admin_client.get(URL).json() == expected


def test_set_saml_settings__sp_certificate__encrypted_at_rest_never_returned(
    admin_client, sp_key_pem
):
    response = post(admin_client, {**ENABLED, "spCertificate": sp_key_pem})

    assert response.status_code == 200
    assert response.json() == {**ENABLED, "spCertificate": "[redacted]"}
    assert "PRIVATE KEY" not in admin_client.get(URL).content.decode()
    stored = SamlSettings.objects.get()
    assert "PRIVATE KEY" not in stored.sp_certificate_encrypted
    assert sp_key_pem not in stored.sp_certificate_encrypted
    assert stored.sp_private_key == sp_key_pem


def test_set_saml_settings__redacted_marker_sent_back__keeps_stored_key(admin_client, sp_key_pem):
    post(admin_client, {**ENABLED, "spCertificate": sp_key_pem})
    read_back = admin_client.get(URL).json()

    response = post(admin_client, {**read_back, "autoCreate": True})

    assert response.status_code == 200
    assert response.json() == {**ENABLED, "autoCreate": True, "spCertificate": "[redacted]"}
    assert SamlSettings.objects.get().sp_private_key == sp_key_pem


def test_set_saml_settings__redacted_marker_without_stored_key__none_stored(admin_client):
    response = post(admin_client, {**ENABLED, "spCertificate": "[redacted]"})

    assert response.status_code == 200
    assert response.json() == {**ENABLED}
    assert SamlSettings.objects.get().sp_certificate_encrypted is None


@pytest.mark.parametrize(
    "wrong",
    [
        pytest.param(lambda key: [key], id="list"),
        pytest.param(lambda key: {"pem": key}, id="object"),
        pytest.param(lambda key: 12345, id="number"),
    ],
)
def test_set_saml_settings__sp_certificate_wrong_type__400_never_quotes_it(
    admin_client, sp_key_pem, wrong, caplog
):
    secret = wrong(sp_key_pem)
    caplog.set_level("DEBUG")

    response = post(admin_client, {**ENABLED, "spCertificate": secret})

    body = assert_error(response, 400, "ValidationError")
    message = "The `/body/spCertificate` property must be string. Its value is not repeated."
    assert body == {
        "id": body["id"],
        "name": "ValidationError",
        "message": message,
        "details": [{"path": "/body/spCertificate", "message": message}],
    }
    assert "PRIVATE KEY" not in caplog.text
    assert "12345" not in caplog.text


def test_set_saml_settings__replaces_previous_settings(admin_client, sp_key_pem):
    post(admin_client, {**ENABLED, **FULL_OPTIONALS, "spCertificate": sp_key_pem})

    response = post(admin_client, {"enabled": False, "entityId": "other"})

    assert response.status_code == 200
    assert response.json() == {"enabled": False, "entityId": "other"}
    stored = SamlSettings.objects.get()
    assert stored.sign_on_url is None
    assert stored.auto_create is None
    assert stored.sp_certificate_encrypted is None
    assert SamlSettings.objects.count() == 1


# --- POST: validation ---------------------------------------------------------------------------


def required(path: str) -> str:
    return f"The `{path}` property is required. It was not present on the data you sent."


@pytest.mark.parametrize(
    ("body", "expected_details"),
    [
        pytest.param({}, [("/body/enabled", required("/body/enabled"))], id="enabled-missing"),
        pytest.param(
            {"entityId": "e", "signOnUrl": "s", "certificate": "c"},
            [("/body/enabled", required("/body/enabled"))],
            id="enabled-missing-with-fields",
        ),
        pytest.param(
            {"enabled": "true"},
            [("/body/enabled", 'The `/body/enabled` property must be boolean. You sent "true".')],
            id="enabled-string",
        ),
        pytest.param(
            {"enabled": None},
            [("/body/enabled", "The `/body/enabled` property must be boolean. You sent null.")],
            id="enabled-null",
        ),
        pytest.param(
            {"enabled": True},
            [
                ("/body/entityId", required("/body/entityId")),
                ("/body/signOnUrl", required("/body/signOnUrl")),
                ("/body/certificate", required("/body/certificate")),
            ],
            id="enabled-without-required-fields",
        ),
        pytest.param(
            {"enabled": True, "entityId": "e", "signOnUrl": "s"},
            [("/body/certificate", required("/body/certificate"))],
            id="enabled-without-certificate",
        ),
        pytest.param(
            {**ENABLED, "entityId": "", "certificate": "  \n"},
            [
                (
                    "/body/entityId",
                    "The `/body/entityId` property must contain at least one character that is "
                    'not whitespace when `enabled` is true. You sent "".',
                ),
                (
                    "/body/certificate",
                    "The `/body/certificate` property must contain at least one character that "
                    'is not whitespace when `enabled` is true. You sent "  \\n".',
                ),
            ],
            id="enabled-blank-required-fields",
        ),
        pytest.param(
            {**ENABLED, "signOnUrl": 42},
            [("/body/signOnUrl", "The `/body/signOnUrl` property must be string. You sent 42.")],
            id="sign-on-url-number",
        ),
        pytest.param(
            {"enabled": False, "defaultRootRole": "Owner"},
            [
                (
                    "/body/defaultRootRole",
                    "The `/body/defaultRootRole` property must be equal to one of the allowed "
                    'values: "Viewer", "Editor", "Admin". You sent "Owner".',
                )
            ],
            id="default-root-role-not-in-enum",
        ),
        pytest.param(
            {"enabled": False, "defaultRootRoleId": 4},
            [
                (
                    "/body/defaultRootRoleId",
                    "The `/body/defaultRootRoleId` property must be the id of a root role "
                    "(1, 2, 3). You sent 4.",
                )
            ],
            id="default-root-role-id-project-role",
        ),
        pytest.param(
            {"enabled": False, "defaultRootRoleId": 999},
            [
                (
                    "/body/defaultRootRoleId",
                    "The `/body/defaultRootRoleId` property must be the id of a root role "
                    "(1, 2, 3). You sent 999.",
                )
            ],
            id="default-root-role-id-unknown",
        ),
        pytest.param(
            {"enabled": False, "defaultRootRoleId": 2.5},
            [
                (
                    "/body/defaultRootRoleId",
                    "The `/body/defaultRootRoleId` property must be the id of a root role "
                    "(1, 2, 3). You sent 2.5.",
                )
            ],
            id="default-root-role-id-fraction",
        ),
        pytest.param(
            {"enabled": False, "defaultRootRoleId": "2"},
            [
                (
                    "/body/defaultRootRoleId",
                    'The `/body/defaultRootRoleId` property must be number. You sent "2".',
                )
            ],
            id="default-root-role-id-string",
        ),
        pytest.param(
            {"enabled": False, "autoCreate": "yes"},
            [
                (
                    "/body/autoCreate",
                    'The `/body/autoCreate` property must be boolean. You sent "yes".',
                )
            ],
            id="auto-create-string",
        ),
        pytest.param(
            {"enabled": False, "emailDomains": None},
            [
                (
                    "/body/emailDomains",
                    "The `/body/emailDomains` property must be string. You sent null.",
                )
            ],
            id="email-domains-null",
        ),
        pytest.param(
            {"enabled": True, "enableGroupSyncing": 1, "groupJsonPath": ["groups"]},
            [
                ("/body/entityId", required("/body/entityId")),
                ("/body/signOnUrl", required("/body/signOnUrl")),
                ("/body/certificate", required("/body/certificate")),
                (
                    "/body/enableGroupSyncing",
                    "The `/body/enableGroupSyncing` property must be boolean. You sent 1.",
                ),
                (
                    "/body/groupJsonPath",
                    'The `/body/groupJsonPath` property must be string. You sent ["groups"].',
                ),
            ],
            id="several-failures-one-detail-each",
        ),
    ],
)
def test_set_saml_settings__invalid__400_names_each_property(admin_client, body, expected_details):
    response = post(admin_client, body)

    error = assert_error(response, 400, "ValidationError")
    assert [(d["path"], d["message"]) for d in error["details"]] == expected_details
    assert error["message"] == " ".join(message for _, message in expected_details)
    assert not SamlSettings.objects.exists()
    assert not AuditEvent.objects.filter(type__startswith="setting-").exists()


@pytest.mark.parametrize(
    "raw",
    [pytest.param("[]", id="array"), pytest.param('"x"', id="string"), pytest.param("{", id="bad")],
)
def test_set_saml_settings__body_not_an_object__400(admin_client, raw):
    response = admin_client.post(URL, data=raw, content_type="application/json")

    error = assert_error(response, 400, "ValidationError")
    assert error["details"][0]["path"] == "/body"


def test_set_saml_settings__invalid_after_valid__keeps_previous(admin_client):
    post(admin_client, ENABLED)

    response = post(admin_client, {"enabled": True})

    assert_error(response, 400, "ValidationError")
    assert admin_client.get(URL).json() == {**ENABLED}


# --- POST: audit -------------------------------------------------------------------------------


def test_set_saml_settings__audit_events_without_key_material(admin_client, sp_key_pem):
    post(admin_client, {**ENABLED, "spCertificate": sp_key_pem, "autoCreate": True})
    post(admin_client, {**ENABLED, "spCertificate": sp_key_pem, "autoCreate": False})

    created, updated = AuditEvent.objects.order_by("id")
    assert created.type == "setting-created"
    assert created.created_by == "admin-tok"
    assert created.pre_data is None
    assert created.data["id"] == "unleash.enterprise.auth.saml"
    assert created.data["autoCreate"] is True
    assert created.data["entityId"] == ENABLED["entityId"]
    assert created.data["spCertificateSet"] is True
    assert len(created.data["certificateFingerprint"]) == 95  # 32 bytes as AA:BB:…
    assert updated.type == "setting-updated"
    assert updated.pre_data["autoCreate"] is True
    assert updated.data["autoCreate"] is False
    for event in (created, updated):
        text = json.dumps([event.data, event.pre_data])
        assert "certificate" not in {k for d in (event.data, event.pre_data or {}) for k in d}
        assert "spCertificate" not in text.replace("spCertificateSet", "").replace(
            "spCertificateFingerprint", ""
        )
        assert CERT.splitlines()[0][:40] not in text
        assert "PRIVATE KEY" not in text
        body = sp_key_pem.splitlines()[1]
        assert body not in text


def test_set_saml_settings__new_sp_key__recorded_as_a_change(admin_client, sp_key_pem):
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other_pem = other.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()
    post(admin_client, {**ENABLED, "spCertificate": sp_key_pem})

    post(admin_client, {**ENABLED, "spCertificate": other_pem})

    updated = AuditEvent.objects.get(type="setting-updated")
    assert updated.data["spCertificateFingerprint"] != updated.pre_data["spCertificateFingerprint"]


def test_set_saml_settings__same_settings_again__no_event(admin_client):
    post(admin_client, ENABLED)

    response = post(admin_client, ENABLED)

    assert response.status_code == 200
    assert list(AuditEvent.objects.values_list("type", flat=True)) == ["setting-created"]


def test_set_saml_settings__personal_token_of_admin__event_names_the_user(admin_user_client):
    response = post(admin_user_client, ENABLED)

    assert response.status_code == 200
    event = AuditEvent.objects.get(type="setting-created")
    assert event.created_by == admin_user_client.user.email
    assert event.created_by_user_id == admin_user_client.user.pk


# --- POST/GET: authentication, permission, content type ------------------------------------------


@pytest.mark.parametrize("method", ["get", "post"])
def test_saml_settings__anonymous__401(anon_client, method):
    response = post(anon_client, ENABLED) if method == "post" else anon_client.get(URL)

    assert_error(response, 401, "AuthenticationRequired")


@pytest.mark.parametrize("principal", ["client_token_client", "viewer_client", "editor_client"])
@pytest.mark.parametrize("method", ["get", "post"])
def test_saml_settings__without_admin__403(db, request, principal, method):
    client = request.getfixturevalue(principal)

    response = post(client, ENABLED) if method == "post" else client.get(URL)

    assert_error(response, 403, "NoAccessError")
    assert not SamlSettings.objects.exists()


def test_saml_settings__editor__403_names_admin_permission(editor_client):
    error = assert_error(post(editor_client, ENABLED), 403, "NoAccessError")

    assert error["permissions"] == ["ADMIN"]
    assert '"ADMIN" permission' in error["message"]


@pytest.mark.parametrize(
    ("content_type", "shown"),
    [
        pytest.param("text/plain", "text/plain", id="text-plain"),
        pytest.param(
            "application/x-www-form-urlencoded", "application/x-www-form-urlencoded", id="form"
        ),
    ],
)
def test_set_saml_settings__wrong_content_type__415(admin_client, content_type, shown):
    response = admin_client.post(URL, data=json.dumps(ENABLED), content_type=content_type)

    error = assert_error(response, 415, "ContentTypeerror")
    assert f"({shown})" in error["message"]
    assert not SamlSettings.objects.exists()


def test_set_saml_settings__json_with_charset__200(admin_client):
    response = admin_client.post(
        URL, data=json.dumps(ENABLED), content_type="application/json; charset=utf-8"
    )

    assert response.status_code == 200


# --- encryption at rest -------------------------------------------------------------------------


def test_sp_key_encryption__secret_key_rotated_with_fallback__still_readable(settings):
    token = encrypt_secret("secret key text")
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-brand-new-secret-key"

    assert decrypt_secret(token) == "secret key text"


def test_sp_key_encryption__secret_key_replaced__treated_as_unset(settings):
    token = encrypt_secret("secret key text")
    settings.SECRET_KEY = "a-brand-new-secret-key"

    assert decrypt_secret(token) is None


# --- OpenAPI -----------------------------------------------------------------------------------


def test_openapi__saml_settings_documented_as_the_specification_names_them(anon_client, db):
    document = anon_client.get("/docs/openapi.json").json()
    post_op = document["paths"][URL]["post"]
    schemas = document["components"]["schemas"]

    assert post_op["operationId"] == "setSamlSettings"
    assert post_op["requestBody"]["required"] is True
    assert post_op["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/samlSettingsSchema"
    }
    assert set(post_op["responses"]) == {"200", "400", "401", "403", "413", "415"}
    assert post_op["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/samlSettingsResponseSchema"
    }
    enabled_variant, disabled_variant = schemas["samlSettingsSchema"]["oneOf"]
    assert enabled_variant["required"] == ["enabled", "entityId", "signOnUrl", "certificate"]
    assert enabled_variant["properties"]["enabled"]["allOf"] == [
        {"type": "boolean", "enum": [True]}
    ]
    assert disabled_variant["required"] == ["enabled"]
    assert disabled_variant["properties"]["enabled"]["allOf"] == [
        {"type": "boolean", "enum": [False]}
    ]
    assert "writeOnly" not in enabled_variant["properties"]["spCertificate"]
    response_props = schemas["samlSettingsResponseSchema"]["properties"]
    write_only = (
        'Write-only: stored encrypted and never returned; responses carry "[redacted]" in its '
        "place when a key is stored (and leave it out when none is), and sending "
        '"[redacted]" back keeps the stored key.'
    )
    assert response_props["spCertificate"] == {
        "type": "string",
        "description": "The service provider's signing key (PEM), used to sign sign-out "
        "requests. " + write_only,
    }
    assert enabled_variant["properties"]["spCertificate"]["description"].endswith(write_only)
    assert write_only in post_op["description"]
    assert write_only in post_op["responses"]["200"]["description"]
    assert "spCertificateSet" not in response_props
    assert "required" not in schemas["samlSettingsResponseSchema"]
