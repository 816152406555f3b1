"""What the browser tests share: finding Debian's Chromium and its driver, starting a headless
Chrome that keeps the console log, and the checks and screenshots every test makes."""

import os
import shutil


def find_browser():
    for path in ('/usr/lib/chromium/chromium', shutil.which('chromium') or '', shutil.which('chromium-browser') or ''):
        if path and os.access(path, os.X_OK):
            return path
    return None


def missing_browser():
    """The Debian packages the browser tests need that are not installed."""
    missing = []
    if not find_browser():
        missing.append('chromium')
    if not shutil.which('chromedriver'):
        missing.append('chromium-driver')
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append('python3-selenium')
    return missing


def new_driver(*extra_args):
    """Headless Chromium, 1400x1000, its console log kept (driver.get_log('browser'))."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = find_browser()
    for arg in ('--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu',
                '--hide-scrollbars', '--force-device-scale-factor=1', '--window-size=1400,1000',
                '--no-first-run', '--disable-extensions') + extra_args:
        options.add_argument(arg)
    options.set_capability('goog:loggingPrefs', {'browser': 'ALL'})
    return webdriver.Chrome(service=Service(shutil.which('chromedriver')), options=options)


def alert_text(driver):
    """The text of an open alert, or None."""
    from selenium.common.exceptions import NoAlertPresentException
    try:
        return driver.switch_to.alert.text
    except NoAlertPresentException:
        return None


def screenshot(driver, out, name, max_height):
    """The whole page (at most max_height pixels high) as out/name.png; returns the path."""
    height = driver.execute_script('return document.documentElement.scrollHeight')
    driver.set_window_size(1400, min(max(height, 800), max_height))
    path = os.path.join(out, name + '.png')
    ok = driver.save_screenshot(path)
    driver.set_window_size(1400, 1000)
    if not ok:
        raise AssertionError('could not save ' + path)
    return path
