"""Shared pieces of the dashboard browser tests and the screenshot script.

* :func:`launch_browser`: Debian's headless Chromium driven by Playwright (never a browser
  Playwright downloads), with the flags that work as root in a container; None with a
  LOUD reason when no browser or no Playwright is available.
* :class:`DashboardProcess`: ``rocketq dashboard --port 0`` as a child process, its URL
  read from the ready line.
* :class:`Traffic`: a producer sending to a topic in the background ("traffic flowing").
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rocketq.client.config import ClientConfig
from rocketq.client.producer import Producer
from rocketq.protocol.message import Message

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
FAST = ClientConfig(
    poll_name_server_interval_ms=1000, rebalance_interval_ms=2000, persist_consumer_offset_interval_ms=500
)


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


def browser_missing_reason() -> str | None:
    """Why no browser test can run here (LOUD), or None when one can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "!!! NO BROWSER TESTS: the 'playwright' package is not installed (pip install -e '.[dev]') !!!"
    if chromium_path() is None:
        return "!!! NO BROWSER TESTS: Debian's chromium is not installed (make browser installs it) !!!"
    return None


def browser_test_marks() -> list[Any]:
    """The ``pytestmark`` of a browser test module: integration, slow, and a LOUD skip without a browser."""
    import pytest

    marks: list[Any] = [pytest.mark.integration, pytest.mark.slow]
    missing = browser_missing_reason()
    if missing is not None:
        print(f"\n{missing}\n", file=sys.stderr)
        marks.append(pytest.mark.skip(reason=missing))
    return marks


@contextlib.contextmanager
def launch_browser(viewport: tuple[int, int] = (1400, 900)) -> Iterator[Any]:
    """A Playwright browser context on Debian's Chromium with a fresh profile."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="rocketq-chromium-")
    try:
        with sync_playwright() as pw:
            ctx = pw.chromium.launch_persistent_context(
                profile,
                executable_path=chromium_path(),
                headless=True,
                args=CHROMIUM_ARGS,
                viewport={"width": viewport[0], "height": viewport[1]},
            )
            try:
                yield ctx
            finally:
                ctx.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


class DashboardProcess:
    """``rocketq dashboard -n NAMESRV --port 0`` as a child; ``url`` once it is listening.

    ``extra`` are more command-line options, ``env`` more environment variables of the child."""

    def __init__(self, namesrv: str, work_dir: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        ready = work_dir / "dashboard.ready"
        ready.unlink(missing_ok=True)
        self.log_file = work_dir / "dashboard.log"
        log = open(self.log_file, "ab")  # noqa: SIM115 - handed to the child
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "rocketq.cli.main",
                    "dashboard",
                    "-n",
                    namesrv,
                    "--port",
                    "0",
                    "--ready-file",
                    str(ready),
                    "--log-level",
                    "warning",
                    *extra,
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                env={**os.environ, **env} if env else None,
            )
        finally:
            log.close()
        deadline = time.monotonic() + 30
        while not ready.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"the dashboard did not start:\n{self.log_file.read_text(errors='replace')}"
                )
            time.sleep(0.05)
        self.url = str(json.loads(ready.read_text())["dashboard"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class Traffic:
    """Sends a message to ``topic`` every ``interval_s`` on a daemon thread until :meth:`stop`."""

    def __init__(self, namesrv: str, topic: str, group: str, interval_s: float = 0.05) -> None:
        self.producer = Producer(group, namesrv_addr=namesrv, client_config=FAST)
        self.producer.start()
        self.topic = topic
        self.sent = 0
        self._stop = threading.Event()
        self._interval = interval_s
        self._thread = threading.Thread(target=self._run, name="dashboard-traffic", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.producer.send(Message(self.topic, f"traffic-{self.sent}".encode(), tags="traffic"))
                self.sent += 1
            except Exception:  # a send failing during start-up or shutdown is fine for traffic
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.shutdown()
