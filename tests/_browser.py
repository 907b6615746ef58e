"""Headless Chromium for the dashboard: the browser test and `tools/history_bench.py demo`'s screenshot."""

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Debian's chromium headless, offline, as root (docs/history.md "The browser test")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)
