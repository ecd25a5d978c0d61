"""A real headless Chromium driven by Selenium, for tests that look at pages as a user does.

Every check waits for the element it needs (``WebDriverWait``, bounded) instead of hoping the
page finished within a fixed budget, so a loaded machine makes a test slower, not red.
Needs Debian's ``chromium`` and ``chromium-driver`` and the ``selenium`` package; without
them :func:`require_browser` skips the test and names what is missing.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("chromedriver", "chromium-driver")
PAGE_TIMEOUT_S = 120.0


def _first_on_path(names: tuple[str, ...]) -> str | None:
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    return None


def require_browser() -> tuple[str, str]:
    """Paths of the browser and its driver; skips the calling test when either is missing."""
    pytest.importorskip("selenium", reason="selenium is not installed (pip install selenium)")
    browser = _first_on_path(BROWSERS)
    driver = _first_on_path(DRIVERS)
    if browser is None or driver is None:
        pytest.skip(
            "chromium and chromium-driver are needed (Debian: apt-get install -y "
            "chromium chromium-driver)"
        )
    return browser, driver


@contextlib.contextmanager
def chromium(profile: Path, width: int = 1400, height: int = 1000) -> Iterator[object]:
    """A headless Chromium session; quit (and its driver ended) whatever happens."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = require_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        f"--window-size={width},{height}",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    # An explicit driver path: Selenium Manager would otherwise try to download one.
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    driver.set_page_load_timeout(PAGE_TIMEOUT_S)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for_css(driver: object, selector: str, timeout: float = PAGE_TIMEOUT_S) -> object:
    """The first element matching ``selector`` once it is displayed; fails after ``timeout``."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.25).until(
        ec.visibility_of_element_located((By.CSS_SELECTOR, selector)),
        message=f"no visible element matched {selector!r} within {timeout:.0f} s",
    )
