"""``ConsoleProcess``: a real ``tslog console`` in a subprocess on a free loopback port, and
``browser_page``: a headless Chromium page (Debian's, driven by Playwright) that records every
console error and uncaught exception, so a test can assert a page loaded cleanly.

The console is started as users start it (``python -m tslog.client.cli console ...``), waits
until it answers HTTP, and is stopped by its pid at teardown.
"""

from __future__ import annotations

import base64
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.helpers.broker_process import free_port

READY_TIMEOUT_S = 30.0
CHROMIUM = "/usr/bin/chromium"  # Debian's package (.ci/run installs it); never Playwright's own


class ConsoleProcess:
    def __init__(self, bootstrap: str, log_dir: Path, *args: str, host: str = "127.0.0.1",
                 auth: tuple[str, str] | None = None) -> None:
        self.port = free_port()
        self.host = host
        self.auth = auth
        self.log_path = Path(log_dir) / f"console-{self.port}.log"
        command = [sys.executable, "-m", "tslog.client.cli", "console", "--bootstrap",
                   bootstrap, "--listen", f"{host}:{self.port}", *args]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        self._wait_ready()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def headers(self) -> dict:
        if self.auth is None:
            return {}
        token = base64.b64encode(f"{self.auth[0]}:{self.auth[1]}".encode()).decode()
        return {"Authorization": f"Basic {token}"}

    def get(self, path: str, headers: dict | None = None,
            timeout_s: float = 30.0) -> tuple[int, str]:
        request = urllib.request.Request(
            self.url + path, headers=self.headers() if headers is None else headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def post(self, path: str, body: bytes) -> tuple[int, str]:
        request = urllib.request.Request(self.url + path, data=body, headers={
            **self.headers(), "Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"console exited with {self.process.returncode}:\n"
                                   f"{self.log_text()}")
            try:
                urllib.request.urlopen(self.url + "/", timeout=5).close()
                return
            except urllib.error.HTTPError:  # answered (e.g. 401: it asks for a login)
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"console not ready after {READY_TIMEOUT_S} s:\n{self.log_text()}")

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)


class BrowserPage:
    """One Chromium page and the errors it reported (console errors, uncaught exceptions,
    responses with status >= 400 other than those a test expects)."""

    def __init__(self, browser, base_url: str, credentials: tuple[str, str] | None = None):
        options = {"http_credentials": {"username": credentials[0], "password": credentials[1]}} \
            if credentials else {}
        self.context = browser.new_context(viewport={"width": 1100, "height": 700}, **options)
        self.page = self.context.new_page()
        self.base_url = base_url
        self.errors: list[str] = []
        self.page.on("console", lambda message: message.type == "error"
                     and self.errors.append(f"console: {message.text}"))
        self.page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))

    def open(self, path: str, status: int = 200):
        response = self.page.goto(self.base_url + path)
        assert response is not None and response.status == status, (path, response and
                                                                     response.status)
        assert self.errors == [], self.errors
        return self.page

    def close(self) -> None:
        self.context.close()


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM,
                                      args=["--no-sandbox", "--disable-gpu"])
