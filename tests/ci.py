"""What a test does when something it needs is missing: skip on a learner's machine (offline,
no browser), fail in CI, where every test must really run."""
import os
import shutil

import pytest


def in_ci() -> bool:
    """Whether the environment variable CI is set to something true (.ci/run sets it)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def skip_or_fail(reason: str):
    """Skip with ``reason`` locally; fail with it in CI."""
    if in_ci():
        pytest.fail(f"{reason} (CI is set: this must not be skipped)", pytrace=False)
    pytest.skip(reason)


def chromium_and_playwright():
    """``(Chromium's path, playwright's sync_playwright)`` for the browser tests: Debian's
    ``chromium`` or the browser ``$CHROMIUM`` names (e.g. Google Chrome on a laptop), driven by
    Playwright through ``executable_path`` (its own browser download is never used). Skips
    locally and fails in CI when either is missing."""
    chromium = shutil.which(os.environ.get("CHROMIUM") or "chromium")
    if chromium is None:
        skip_or_fail("Debian's chromium is not installed (apt-get install -y chromium), "
                     "and $CHROMIUM names no browser")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("the playwright Python package is not installed (pip install -r requirements.txt)")
    return chromium, sync_playwright
