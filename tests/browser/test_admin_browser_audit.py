"""The audit log in a real browser (Debian's chromium, headless, driven by selenium; the set-up
of tests/browser/test_admin_browser.py): who changed what, by the actor's box, then one event's data
beside its pre-data. Skipped, as that module is, when chromium or chromedriver is missing."""

from __future__ import annotations

import logging

from features.services import update_feature_metadata
from flagadmin.api.principals import TokenPrincipal
from flagadmin.core.models import AuditEvent, Role, TokenType
from tests.browser.test_admin_browser import (  # noqa: F401 (the browser fixture, used by name)
    SCREENSHOTS,
    _operator,
    _sign_in,
    browser,
    pytestmark,
)
from tests.factories import FeatureFactory, UserFactory, make_token

AUDIT = "/admin/flagadmin/auditevent/"


def _changes() -> AuditEvent:
    """A person and a token each change a flag's metadata; returns the person's event."""
    ann = UserFactory(username="ann", email="ann@example.com", root_role_id=Role.ADMIN)
    token, _ = make_token(TokenType.ADMIN, name="deploy-bot")
    checkout = FeatureFactory(name="checkout", description="Old checkout", type="release")
    search = FeatureFactory(name="search", description="Search box")
    update_feature_metadata(
        feature=checkout,
        description="New checkout",
        type="experiment",
        stale=False,
        impression_data=False,
        actor=ann,
    )
    update_feature_metadata(
        feature=search,
        description="Search box v2",
        type="release",
        stale=False,
        impression_data=False,
        actor=TokenPrincipal(token),
    )
    return AuditEvent.objects.get(type="feature-metadata-updated", feature_name="checkout")


def test_audit_log__filtered_by_actor__event_shows_its_diff(live_server, browser, caplog):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    caplog.set_level(logging.WARNING, logger="django.request")
    _operator()
    event = _changes()
    base = live_server.url
    driver = browser

    def loaded(d) -> bool:
        return d.execute_script("return document.readyState") == "complete"

    def rows() -> list[tuple[str, str, str]]:
        return [
            (
                row.find_element(By.CSS_SELECTOR, ".field-actor").text,
                row.find_element(By.CSS_SELECTOR, ".field-type").text,
                row.find_element(By.CSS_SELECTOR, ".field-target").text,
            )
            for row in driver.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
        ]

    try:
        _sign_in(driver, base)
        driver.get(base + AUDIT)
        assert ("deploy-bot", "feature-metadata-updated", "flag search") in rows()
        assert ("ann@example.com", "feature-metadata-updated", "flag checkout") in rows()

        # Who changed what: the actor typed into its box (suggested), Enter applies it.
        box = driver.find_element(By.CSS_SELECTOR, "form[data-parameter=actor] input[name=actor]")
        suggested = driver.find_elements(By.CSS_SELECTOR, "#filter-actor-suggestions option")
        assert "ann@example.com" in [o.get_attribute("value") for o in suggested]
        box.send_keys("ann@example.com", Keys.ENTER)
        WebDriverWait(driver, 10).until(lambda d: "actor=ann%40example.com" in d.current_url)
        WebDriverWait(driver, 10).until(loaded)
        assert rows() == [("ann@example.com", "feature-metadata-updated", "flag checkout")]

        # The event's page: what changed, side by side, the changed keys highlighted.
        driver.find_element(By.CSS_SELECTOR, "#result_list tbody tr th a").click()
        page = f"/auditevent/{event.pk}/change/"
        WebDriverWait(driver, 10).until(lambda d: page in d.current_url)
        changed = {
            row.get_attribute("data-path"): (
                row.find_element(By.CSS_SELECTOR, "td.before").text,
                row.find_element(By.CSS_SELECTOR, "td.after").text,
            )
            for row in driver.find_elements(By.CSS_SELECTOR, "table.audit-diff tr.changed")
        }
        assert changed == {
            "description": ('"Old checkout"', '"New checkout"'),
            "type": ('"release"', '"experiment"'),
        }
        after = driver.find_element(By.CSS_SELECTOR, "table.audit-diff tr.changed td.after")
        assert after.value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"
        unchanged = driver.find_elements(By.CSS_SELECTOR, "table.audit-diff tr.unchanged")
        assert "name" in [row.get_attribute("data-path") for row in unchanged]
        summary = driver.find_element(By.CSS_SELECTOR, ".audit-diff-summary").text
        assert summary == "2 keys changed of 6."
        # No 404 on the way (the favicon included).
        assert [r.getMessage() for r in caplog.records if r.name == "django.request"] == []
    except Exception:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SCREENSHOTS / "audit-at-failure.png"))
        raise
