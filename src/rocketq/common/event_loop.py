"""The event loop rocketq's server processes run on: uvloop when installed, asyncio otherwise.

The name server and broker processes (``rocketq namesrv``/``broker``/``server``, and so the servers
``rocketq.testing`` launches) run their asyncio code on uvloop when it is importable (the
``rocketq[speed]`` extra; ``make`` installs it). ``ROCKETQ_NO_UVLOOP=1`` opts out and runs the
standard asyncio loop; so does a server configured for TLS (its handshake path times out on uvloop,
see ``rocketq.cli.servers._run``). The choice is independent of the compiled build (``rocketq._build``).
Clients choose their own loop (``rocketq.aio`` runs on any).
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
from collections.abc import Coroutine
from typing import Any

from rocketq._build import env_flag

#: Environment variable: any value but "", "0", "false", "no" keeps the servers on asyncio's loop.
NO_UVLOOP_ENV = "ROCKETQ_NO_UVLOOP"


def uvloop_wanted() -> str | None:
    """Why the servers will not use uvloop (``None`` when they will)."""
    value = os.environ.get(NO_UVLOOP_ENV)
    if env_flag(value):
        return f"{NO_UVLOOP_ENV}={value}"
    try:
        importlib.import_module("uvloop")
    except ImportError:
        return "uvloop not installed"
    return None


def new_server_loop() -> asyncio.AbstractEventLoop:
    """A new event loop for a server process: uvloop's unless :func:`uvloop_wanted` says why not."""
    if uvloop_wanted() is None:
        loop: asyncio.AbstractEventLoop = importlib.import_module("uvloop").new_event_loop()
        return loop
    return asyncio.new_event_loop()


def describe_server_loop() -> str:
    """``uvloop X.Y`` or ``asyncio (reason)``: for ``rocketq --version`` and the ready line."""
    reason = uvloop_wanted()
    if reason is None:
        return f"uvloop {getattr(importlib.import_module('uvloop'), '__version__', '?')}"
    return f"asyncio ({reason})"


def loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """``uvloop`` or ``asyncio``: which implementation *loop* is."""
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


def run_on_server_loop(main: Coroutine[Any, Any, None], *, uvloop: bool = True) -> None:
    """``asyncio.run(main)`` on :func:`new_server_loop` (asyncio's loop when not ``uvloop``).
    ``asyncio.run`` takes no loop factory before Python 3.12, ``asyncio.Runner`` none before 3.11."""
    factory = new_server_loop if uvloop else asyncio.new_event_loop
    if sys.version_info >= (3, 11):
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(main)
        return
    loop = factory()  # pragma: no cover - Python 3.10
    try:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(main)
    finally:
        try:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
