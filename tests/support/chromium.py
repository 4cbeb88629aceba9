"""Headless Chromium for the browser tests: the DOM of a page as the browser rendered it.

Debian's `chromium`, installed by scripts/_chromium.sh (which scripts/_venv.sh runs). The flags are the ones
that work on the project's machines: no sandbox (root), no GPU, and no background networking, which the
closed network would refuse at every start. Each call gets a fresh profile directory.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from html.parser import HTMLParser

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def chromium() -> str:
    """The browser's path; skips the test, naming why, when it is not installed."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("chromium is not installed (scripts/_chromium.sh installs it with apt-get as root)")
    return path


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="streamlet-chromium-") as profile:
        return subprocess.run(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def dump_dom(url: str, *, budget_ms: int = 1000, timeout: float = 90.0) -> str:
    """The page's DOM as Chromium rendered it, scripts run for up to `budget_ms` of virtual time (keep it below
    a page's meta refresh: a dump taken while the page reloads is empty)."""
    done = _run([f"--virtual-time-budget={budget_ms}", "--dump-dom", url], timeout)
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout


class Elements(HTMLParser):
    """Every element's tag and attributes in a DOM dump, in document order, and its text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        """Elements with `tag` whose attributes include `attrs` (`class_` matches one of the classes)."""
        wanted_class = attrs.pop("class_", None)
        return [
            a
            for t, a in self.elements
            if t == tag
            and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())
            and (wanted_class is None or wanted_class in a.get("class", "").split())
        ]
