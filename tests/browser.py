"""Headless Chromium driven through chromedriver's WebDriver HTTP API, standard library only.

Debian's ``chromium`` and ``chromium-driver`` packages provide both; :func:`missing`
says why a test cannot run where they are absent.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

#: Chromium's binary and its driver, as Debian installs them.
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


def missing() -> str | None:
    """Why the browser cannot run here, or ``None``."""
    if CHROMIUM is None or DRIVER is None:
        return (
            "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
        )
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Browser:
    """One headless Chromium session; ``with Browser() as browser:`` ends it."""

    def __init__(self):
        port = _free_port()
        self._driver = subprocess.Popen(
            [DRIVER, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self._base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                self._call("GET", "/status")
                break
            except OSError:
                time.sleep(0.05)
        options = {
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,900"],
        }
        capabilities = {"goog:chromeOptions": options, "goog:loggingPrefs": {"browser": "ALL"}}
        session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}})
        self._session = f"/session/{session['sessionId']}"

    def _call(self, method: str, path: str, body: dict | None = None):
        request = urllib.request.Request(
            self._base + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())["value"]

    def open(self, path: Path) -> None:
        """Load a local file and wait for it."""
        self._call("POST", f"{self._session}/url", {"url": path.resolve().as_uri()})

    def run(self, script: str):
        """The value of a script's ``return`` in the page."""
        return self._call("POST", f"{self._session}/execute/sync", {"script": script, "args": []})

    def console(self) -> list[dict]:
        """The console's entries since the last call (level, message)."""
        return self._call("POST", f"{self._session}/se/log", {"type": "browser"})

    def screenshot(self, path: Path) -> None:
        """Save what the window shows as a PNG."""
        path.write_bytes(base64.b64decode(self._call("GET", f"{self._session}/screenshot")))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        try:
            self._call("DELETE", self._session)
        finally:
            self._driver.terminate()
            self._driver.wait(timeout=10)
