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


WINDOW = (1400, 1000)


@pytest.fixture(scope="session")
def _chromium():
    """One headless Chromium per test session (per xdist worker): starting one costs a second
    or more, and ``driver`` hands each test a clean one."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium")
    browser, chromedriver = browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu",
                f"--window-size={WINDOW[0]},{WINDOW[1]}"):
        options.add_argument(arg)
    from selenium.webdriver.chrome.service import Service

    def start():
        chrome = webdriver.Chrome(options=options, service=Service(chromedriver))
        chrome.set_page_load_timeout(20)
        return chrome

    browsers = [start()]
    try:
        yield browsers, start
    finally:
        browsers[0].quit()


@pytest.fixture
def driver(_chromium):
    """The session's Chromium as a fresh one: a blank page, no cookies, the default window
    size, no open alert. A browser that no longer answers (a test crashed it) is replaced."""
    browsers, start = _chromium
    chrome = browsers[0]
    try:
        _reset(chrome)
    except Exception:  # whatever broke it, a new browser is the remedy
        try:
            chrome.quit()
        except Exception:  # it is gone already
            pass
        chrome = browsers[0] = start()
        _reset(chrome)
    yield chrome


def _reset(chrome) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        chrome.switch_to.alert.dismiss()
    except NoAlertPresentException:
        pass
    chrome.get("about:blank")
    chrome.delete_all_cookies()
    chrome.set_window_size(*WINDOW)
