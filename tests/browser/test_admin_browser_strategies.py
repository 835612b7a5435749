"""The strategy editor in a real browser (Debian's chromium, headless, driven by selenium, as
tests/browser/test_admin_browser.py drives it): an operator adds a 50 % rollout by userId with a
constraint from the flag's page, sees it in words on the flag's page and in the flag list, and
SDKs then decide as configured: the users the constraint names and the rollout's half of them
are on, every other user off.

Skipped only when chromium or chromedriver is missing (CI installs both, `.ci/run`).
"""

from __future__ import annotations

import mmh3

from evaluation.engine import fresh_engine
from features.models import FeatureStrategy
from flagadmin.core.models import AuditEvent
from tests.browser.test_admin_browser import (  # noqa: F401 (the browser fixture, used by name)
    SCREENSHOTS,
    _operator,
    _screenshots,
    _sign_in,
    browser,
    pytestmark,
)
from tests.factories import FeatureEnvironmentFactory, FeatureFactory

# Users the constraint names, and users it does not.
LISTED = [f"user-{n}" for n in range(1, 13)]
UNLISTED = [f"visitor-{n}" for n in range(1, 13)]
SUMMARY = "50 % by userId, if userId IN user-1, user-2, user-3, user-4, user-5 and 7 more"


def in_rollout(group_id: str, user_id: str, percentage: int) -> bool:
    """Unleash's gradual rollout, as its SDKs compute it: the 32-bit MurmurHash3 (seed 0) of
    `groupId:userId`, modulo 100, plus 1, at most the percentage."""
    return percentage > 0 and mmh3.hash(f"{group_id}:{user_id}", signed=False) % 100 + 1 <= (
        percentage
    )


def test_strategy_editor__rollout_with_a_constraint__summary_and_sdk_decisions(
    live_server,
    browser,  # noqa: F811 (the fixture imported above)
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    operator = _operator()
    flag = FeatureFactory(name="checkout-button")
    FeatureEnvironmentFactory(feature=flag, environment_id="development", enabled=True)
    FeatureEnvironmentFactory(feature=flag, environment_id="production", enabled=False)
    base = live_server.url
    driver = browser

    def development_row():
        rows = driver.find_elements(By.CSS_SELECTOR, "#environments-group tbody tr")
        return next(row for row in rows if "development" in row.text)

    def loaded(_) -> bool:
        return driver.execute_script("return document.readyState") == "complete"

    try:
        _sign_in(driver, base)

        # From the flag's page, its development row: on for everyone, no strategy yet.
        driver.get(f"{base}/admin/features/feature/checkout-button/change/")
        assert development_row().find_element(By.CSS_SELECTOR, "td.field-rollout").text == (
            "on for everyone"
        )
        development_row().find_element(By.LINK_TEXT, "Add a strategy").click()
        WebDriverWait(driver, 10).until(lambda d: "/featurestrategy/add/" in d.current_url)
        WebDriverWait(driver, 10).until(loaded)

        # A flexible rollout (the editor's first choice) of 50 % by userId: the slider follows
        # the number, and only the rollout's parameters are shown.
        assert Select(driver.find_element(By.ID, "id_name")).first_selected_option.text == (
            "flexibleRollout"
        )
        assert not driver.find_element(By.ID, "id_ips").is_displayed()
        rollout = driver.find_element(By.ID, "id_rollout")
        rollout.clear()
        rollout.send_keys("50")
        slider = driver.find_element(By.ID, "rollout-slider")
        assert slider.get_attribute("value") == "50"
        Select(driver.find_element(By.ID, "id_stickiness")).select_by_value("userId")

        # A constraint: userId IN the listed users, one a line. A single-value operator
        # would show the value box instead of the list.
        Select(driver.find_element(By.NAME, "constraints-0-context_name")).select_by_value("userId")
        operator_box = Select(driver.find_element(By.NAME, "constraints-0-operator"))
        operator_box.select_by_value("NUM_GT")
        assert driver.find_element(By.NAME, "constraints-0-value").is_displayed()
        assert not driver.find_element(By.NAME, "constraints-0-values").is_displayed()
        operator_box.select_by_value("IN")
        values = driver.find_element(By.NAME, "constraints-0-values")
        assert values.is_displayed()
        values.send_keys("\n".join(LISTED))
        # Another row appears on demand; left empty, it is no constraint.
        driver.find_element(By.ID, "constraints-add").click()
        assert len(driver.find_elements(By.CSS_SELECTOR, "#constraints-group tr.editor-row")) == 2
        driver.find_element(By.NAME, "_save").click()

        # Back on the flag's page, the strategy in words.
        WebDriverWait(driver, 10).until(
            lambda d: d.current_url == f"{base}/admin/features/feature/checkout-button/change/"
        )
        WebDriverWait(driver, 10).until(loaded)
        assert development_row().find_element(By.CSS_SELECTOR, "td.field-rollout").text == (SUMMARY)
        assert driver.find_element(By.CSS_SELECTOR, "a.strategy-link").text == SUMMARY

        # And in the flag list, whose columns all still fit 1400 px.
        driver.get(f"{base}/admin/features/feature/")
        [row] = driver.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
        assert row.find_element(By.CSS_SELECTOR, "td.field-rollout").text == (
            f"development: {SUMMARY}\nproduction: off"
        )
        assert driver.execute_script(
            "const box = document.querySelector('#changelist .results');"
            "return box.scrollWidth <= box.clientWidth;"
        ), "the flag list's last columns are cut off at 1400 px"

        # Stored as the API would store it, with its event.
        strategy = FeatureStrategy.objects.get()
        assert strategy.parameters == {
            "rollout": "50",
            "stickiness": "userId",
            "groupId": "checkout-button",
        }
        assert strategy.constraints == [
            {
                "contextName": "userId",
                "operator": "IN",
                "caseInsensitive": False,
                "inverted": False,
                "values": LISTED,
            }
        ]
        event = AuditEvent.objects.get(type="feature-strategy-add")
        assert (event.feature_name, event.environment, event.created_by_user_id) == (
            "checkout-button",
            "development",
            operator.pk,
        )

        # SDKs decide as configured (Unleash's engine over the client payload).
        engine = fresh_engine("development")
        decided = {
            user: engine.decide("checkout-button", {"userId": user}).enabled
            for user in LISTED + UNLISTED
        }
        expected = {user: in_rollout("checkout-button", user, 50) for user in LISTED}
        expected |= dict.fromkeys(UNLISTED, False)
        assert decided == expected
        # Both halves are there: the rollout decides among the listed users.
        assert 0 < sum(expected.values()) < len(LISTED)
    except Exception:
        _screenshots(driver, base, "checkout-button")
        raise
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / "strategy-summary.png"))
