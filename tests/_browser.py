"""A headless Chromium for the tests that check pages as a reader sees them.

Debian's ``chromium`` and ``chromium-driver`` (``make test`` installs them when it can) driven by
selenium; a test that asks for the ``driver`` fixture skips with the reason when one is missing.
"""

from __future__ import annotations

import os
import shutil

import pytest


def browser_paths() -> tuple[str, str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or (
        "/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
    if not browser or not driver:
        pytest.skip("headless browser test needs Debian's chromium and chromium-driver "
                    f"(chromium: {browser or 'missing'}, chromedriver: {driver or 'missing'}; "
                    "`make test` installs them when it can)")
    return browser, driver


@pytest.fixture
def driver():
    webdriver = pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium")
    browser, chromedriver = browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(arg)
    from selenium.webdriver.chrome.service import Service

    chrome = webdriver.Chrome(options=options, service=Service(chromedriver))
    try:
        chrome.set_page_load_timeout(20)
        yield chrome
    finally:
        chrome.quit()
