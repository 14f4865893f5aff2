"""The browser and page fixtures of ``test_browser`` shared with the other real-browser modules."""

from tests.e2e.test_browser import browser, page  # noqa: F401
