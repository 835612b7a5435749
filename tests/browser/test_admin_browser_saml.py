"""The SAML page of the Django admin in a real browser (Debian's chromium, headless, driven by
selenium, with tests/browser/test_admin_browser.py's browser): an administrator opens it before any
SAML settings are stored and finds what the identity provider needs, the SP entity id, the callback
URL and the metadata, to copy or to download.

Skipped only when chromium or chromedriver is missing (CI installs both, `.ci/run`).
"""

from __future__ import annotations

import pytest

from auth_saml.metadata import sp_metadata_xml
from auth_saml.models import SamlSettings
from tests.browser import test_admin_browser
from tests.browser.test_admin_browser import (
    CHROMEDRIVER,
    CHROMIUM,
    SCREENSHOTS,
    _operator,
    _sign_in,
)

browser = test_admin_browser.browser  # its fixture: chromium with its switches, then quit

PUBLIC_BASE_URL = "https://flags.example.com"

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None or CHROMEDRIVER is None,
        reason="chromium and chromedriver are not installed (apt-get install chromium "
        "chromium-driver; .ci/run installs them)",
    ),
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("seeded_rows_back_after_module"),
]


def test_saml_page__before_any_settings__shows_what_the_identity_provider_needs(
    live_server, browser, settings
):
    from selenium.webdriver.common.by import By

    settings.PUBLIC_BASE_URL = PUBLIC_BASE_URL
    assert not SamlSettings.objects.exists()
    _operator()
    base = live_server.url
    _sign_in(browser, base)

    try:
        # From the admin's index, as an operator finds it.
        browser.find_element(By.LINK_TEXT, "SAML settings").click()
        browser.find_element(By.ID, "saml-service-provider")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SCREENSHOTS / "saml-settings.png"))

        assert browser.current_url == base + "/admin/auth_saml/samlsettings/"
        assert browser.find_element(By.ID, "sp-entity-id").text == PUBLIC_BASE_URL
        assert browser.find_element(By.ID, "sp-acs-url").text == (
            f"{PUBLIC_BASE_URL}/auth/saml/callback"
        )
        metadata = browser.find_element(By.ID, "sp-metadata-xml")
        assert metadata.is_displayed()
        assert metadata.get_attribute("value") == sp_metadata_xml()
        assert f'entityID="{PUBLIC_BASE_URL}"' in metadata.get_attribute("value")
        assert "No SAML settings are stored yet" in browser.find_element(By.TAG_NAME, "body").text

        # The download link gives the same document, as a file, with this session.
        link = browser.find_element(By.ID, "sp-metadata-download")
        assert link.get_attribute("href") == base + "/admin/auth_saml/samlsettings/sp-metadata.xml"
        downloaded = browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch(arguments[0], {credentials: 'same-origin'}).then(async (r) => done({"
            "  status: r.status,"
            "  disposition: r.headers.get('Content-Disposition'),"
            "  body: await r.text()"
            "}));",
            link.get_attribute("href"),
        )
        assert downloaded == {
            "status": 200,
            "disposition": 'attachment; filename="flagadmin-sp-metadata.xml"',
            "body": sp_metadata_xml(),
        }
    except Exception:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(SCREENSHOTS / "saml-settings.png"))
        raise
