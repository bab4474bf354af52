"""A real browser for the tests: Debian's headless Chromium, driven through Debian's
chromedriver by Selenium, the W3C WebDriver's official Python bindings. Both Debian packages
come from one Chromium build, so the driver always matches the browser, and Selenium is given
the driver's path, so nothing is downloaded at run time (Playwright would fetch its own
browser). `.ci/run` installs the two packages; where they are missing the browser tests skip
and say so."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

PHONE = {"width": 390, "height": 844, "pixelRatio": 3.0}
"""A phone-sized window (an iPhone 12's CSS pixels), emulated with touch."""


@contextlib.contextmanager
def browser(*, phone: bool = False) -> Iterator[Any]:
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.skip("no headless Chromium here (Debian's chromium and chromium-driver packages; .ci/run installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1100,900",
    ):
        options.add_argument(argument)
    if phone:
        options.add_experimental_option("mobileEmulation", {"deviceMetrics": PHONE})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()


def wait_until(check: Callable[[], Any], what: str, seconds: float = 10.0) -> Any:
    """Polls `check` (in the browser's own time: a blocking call) until it is truthy."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            value = check()
        except Exception:  # noqa: BLE001 - an element not there yet
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"waited {seconds:g} s in the browser for {what}")
        time.sleep(0.05)
