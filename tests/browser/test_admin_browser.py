"""The operators' path through the Django admin in a real browser (Debian's chromium, headless,
driven by selenium): sign in, find a flag by a tag, enable it in production with the bulk
action, check the flag's page and its audit event, add an API token and reload the page that
shows its secret, sign out.

Skipped only when chromium or chromedriver is missing (CI installs both, `.ci/run`). On failure
it saves screenshots of the main pages to `var/browser-screenshots/` (or
$BROWSER_SCREENSHOTS_DIR).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.utils import timezone

from features.models import FeatureEnvironment, FeatureLifecycleStage
from flagadmin.core.models import ApiToken, AuditEvent, Role
from tests.factories import (
    FeatureEnvironmentFactory,
    FeatureFactory,
    FeatureTagFactory,
    ProjectFactory,
    TagFactory,
    UserFactory,
)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
SCREENSHOTS = Path(
    os.environ.get("BROWSER_SCREENSHOTS_DIR")
    or Path(__file__).resolve().parents[2] / "var" / "browser-screenshots"
)
PASSWORD = "correct horse battery staple"

pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None or CHROMEDRIVER is None,
        reason="chromium and chromedriver are not installed (apt-get install chromium "
        "chromium-driver; .ci/run installs them)",
    ),
    # Seeded rows (roles, environments, the default project) restored around the test, as the
    # other modules whose tests commit do.
    pytest.mark.django_db(transaction=True, serialized_rollback=True),
    pytest.mark.usefixtures("seeded_rows_back_after_module"),
]


@pytest.fixture
def browser() -> Iterator:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="flagadmin-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # The machine's closed network refuses the browser's background connections; these
    # switches keep it from making any, and the empty profile from reusing state.
    for switch in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--window-size=1400,1000",
    ):
        options.add_argument(switch)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _screenshots(driver, base: str, name: str) -> None:
    """The main pages as they look now, for whoever reads the failure."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / "at-failure.png"))
    for label, path in [
        ("index", "/admin/"),
        ("flags", "/admin/features/feature/"),
        ("flag", f"/admin/features/feature/{name}/change/"),
        ("tokens", "/admin/flagadmin/apitoken/"),
        ("events", "/admin/flagadmin/auditevent/"),
    ]:
        driver.get(base + path)
        driver.save_screenshot(str(SCREENSHOTS / f"{label}.png"))


def _operator():
    operator = UserFactory(username="operator", name="Kimberly Bowers", root_role_id=Role.ADMIN)
    operator.set_password(PASSWORD)
    operator.save()
    return operator


def _sign_in(driver, base: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get(base + "/admin/login/?next=/admin/")
    driver.find_element(By.NAME, "username").send_keys("operator")
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    WebDriverWait(driver, 10).until(lambda d: d.current_url == base + "/admin/")


def test_operator_path_through_the_admin(live_server, browser):
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    operator = UserFactory(username="operator", root_role_id=Role.ADMIN)
    operator.set_password(PASSWORD)
    operator.save()
    flag = FeatureFactory(name="checkout-button", description="New checkout button")
    FeatureEnvironmentFactory(feature=flag, environment_id="development", enabled=False)
    FeatureEnvironmentFactory(feature=flag, environment_id="production", enabled=False)
    FeatureTagFactory(feature=flag, tag=TagFactory(value="team-payments"))
    FeatureFactory(name="search-box", description="Unrelated")
    base = live_server.url
    driver = browser

    def text() -> str:
        return driver.find_element(By.TAG_NAME, "body").text

    def fits_the_window() -> bool:
        """The changelist's table is not wider than its box (no column scrolled out)."""
        return driver.execute_script(
            "const box = document.querySelector('#changelist .results');"
            "return box.scrollWidth <= box.clientWidth;"
        )

    def loaded(_) -> bool:
        return driver.execute_script("return document.readyState") == "complete"

    def click_and_wait(selector: str, by: str = By.CSS_SELECTOR) -> None:
        """Click, then wait for the next page to replace this one and finish loading (clicks do
        not block)."""
        page = driver.find_element(By.TAG_NAME, "html")
        driver.find_element(by, selector).click()

        def replaced(_) -> bool:
            try:
                page.is_enabled()
            except WebDriverException:
                # Stale, or (chromedriver, mid-navigation) "Node with given id does not belong
                # to the document": either way the old page is gone.
                return True
            return False

        WebDriverWait(driver, 10).until(replaced)
        WebDriverWait(driver, 10).until(loaded)

    try:
        # Sign in.
        driver.get(base + "/admin/")
        driver.find_element(By.NAME, "username").send_keys("operator")
        driver.find_element(By.NAME, "password").send_keys(PASSWORD)
        click_and_wait("input[type=submit]")
        assert "Site administration" in text()

        # Find the flag by its tag.
        driver.get(base + "/admin/features/feature/")
        driver.find_element(By.ID, "searchbar").send_keys("team-payments")
        click_and_wait("#changelist-search input[type=submit]")
        rows = driver.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
        assert len(rows) == 1
        assert fits_the_window(), "the flag list's last columns are cut off at 1400 px"
        assert "checkout-button" in rows[0].text
        assert "simple:team-payments" in rows[0].text

        # Enable it in production with the bulk action.
        rows[0].find_element(By.CSS_SELECTOR, "input.action-select").click()
        Select(driver.find_element(By.NAME, "action")).select_by_value("enable_in_production")
        click_and_wait("button[name=index]")
        assert "Enabled 1 flag(s) in production." in text()
        assert FeatureEnvironment.objects.get(feature=flag, environment_id="production").enabled

        # The flag's page shows it enabled in production, and the audit event.
        driver.get(base + "/admin/features/feature/checkout-button/change/")
        environment_rows = driver.find_elements(By.CSS_SELECTOR, "#environments-group tbody tr")
        production = next(row for row in environment_rows if "production" in row.text)
        assert production.find_element(By.CSS_SELECTOR, "input[name$=-enabled]").is_selected()
        assert "feature-environment-enabled" in text()
        event = AuditEvent.objects.get(type="feature-environment-enabled")
        assert (event.feature_name, event.environment, event.created_by) == (
            "checkout-button",
            "production",
            operator.email,
        )

        # Add an API token; its secret is shown once, and a reload creates nothing.
        driver.get(base + "/admin/flagadmin/apitoken/add/")
        driver.find_element(By.NAME, "name").send_keys("ops")
        Select(driver.find_element(By.NAME, "type")).select_by_value("admin")
        click_and_wait("_save", By.NAME)
        secret = driver.find_element(By.ID, "issued-token").get_attribute("value")
        assert secret.startswith("*:*.")
        driver.refresh()
        WebDriverWait(driver, 10).until(loaded)
        assert driver.find_elements(By.ID, "issued-token") == []
        assert driver.find_element(By.ID, "token-secret-gone")
        assert secret not in driver.page_source
        assert ApiToken.objects.filter(name="ops").count() == 1
        driver.get(base + "/admin/flagadmin/apitoken/")
        assert "Last used at" in text() or "LAST USED AT" in text()
        assert fits_the_window(), "the token list's last columns are cut off at 1400 px"

        # Sign out.
        click_and_wait("#logout-form button")
        # Signing out lands on LOGOUT_REDIRECT_URL (the API documentation).
        assert driver.current_url == base + "/docs/"
        driver.get(base + "/admin/")
        assert "/admin/login/" in driver.current_url
    except Exception:
        _screenshots(driver, base, flag.name)
        raise


def test_flag_list__every_column_visible_at_1400_px(live_server, browser):
    from selenium.webdriver.common.by import By

    from projects.models import Environment

    operator = _operator()
    Environment.objects.create(name="staging", type="test", sort_order=150)
    Environment.objects.create(name="pre-production", type="production", sort_order=180)
    projects = [ProjectFactory(id="checkout-team"), ProjectFactory(id="growth-experiments")]
    for index in range(6):
        flag = FeatureFactory(
            name=f"checkout.payment-provider-fallback-{index}",
            project_id=projects[index % 2].id,
            description="Fall back to the second payment provider",
            stale=index == 3,
            last_seen_at=timezone.now(),
            created_by=operator,
        )
        FeatureLifecycleStage.objects.create(feature=flag, stage="pre-live")
        for position, environment in enumerate(
            ["development", "staging", "pre-production", "production"]
        ):
            FeatureEnvironmentFactory(
                feature=flag, environment_id=environment, enabled=(index + position) % 2 == 0
            )
        FeatureTagFactory(feature=flag, tag=TagFactory(value=f"team-payments-{index}"))
        FeatureTagFactory(feature=flag, tag=TagFactory(value=f"area-checkout-{index}"))
    browser.set_window_size(1400, 900)
    _sign_in(browser, live_server.url)

    browser.get(live_server.url + "/admin/features/feature/")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / "flags-1400.png"))

    rows = browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert len(rows) == 6
    assert browser.execute_script(
        "const box = document.querySelector('#changelist .results');"
        "return box.scrollWidth <= box.clientWidth"
        " && document.documentElement.scrollWidth <= document.documentElement.clientWidth;"
    ), "the flag list's last columns are cut off at 1400 px"


def test_admin_pages__load_without_a_404(live_server, browser, caplog):
    # Django logs each 404 as a warning of django.request (the settings show errors only).
    caplog.set_level(logging.WARNING, logger="django.request")
    _operator()
    FeatureFactory(name="checkout-button")
    _sign_in(browser, live_server.url)

    for path in [
        "/admin/",
        "/admin/features/feature/",
        "/admin/features/feature/add/",
        "/admin/features/feature/checkout-button/change/",
        "/admin/flagadmin/apitoken/",
        "/admin/flagadmin/auditevent/",
    ]:
        browser.get(live_server.url + path)

    # The browser asks for /favicon.ico once a site, after the first page's load.
    assert [r.getMessage() for r in caplog.records if r.name == "django.request"] == []
