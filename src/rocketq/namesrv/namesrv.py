"""The name server process: remoting server + route tables + KV table + expiry scan.

Mirrors ``org.apache.rocketmq.namesrv.NamesrvController`` (with
``BrokerHousekeepingService``) of Apache RocketMQ 4.9.7.

Invariants:

* Everything runs on one asyncio event loop: the remoting server, the
  :class:`~rocketq.namesrv.processor.DefaultRequestProcessor` and the expiry scan, which
  first runs after half a period and then every ``scan_not_active_broker_interval_ms``
  (Java: 5 s, then every 10 s). Expiry itself compares the injected ``clock_ms`` against
  the last registration, so tests move a fake clock instead of sleeping.
* A closed connection removes the broker registered over it at once
  (``BrokerHousekeepingService.onChannelClose`` -> ``RouteInfoManager.onChannelDestroy``);
  an expired broker's connection is closed by the scan.
* :meth:`NamesrvController.shutdown` stops the scan and the server and waits for both.

:class:`NamesrvThread` hosts a controller on its own loop in a named thread, for tests
and for embedding in synchronous programs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.kv_config import KVConfigManager
from rocketq.namesrv.processor import DefaultRequestProcessor
from rocketq.namesrv.route_info import RouteInfoManager, monotonic_ms
from rocketq.remoting.server import Channel, RemotingServer

__all__ = ["NamesrvController", "NamesrvThread"]

log = logging.getLogger(__name__)


class NamesrvController:
    """A name server (``NamesrvController``); ``start``/``shutdown`` on an asyncio loop.

    ``clock_ms`` drives broker expiry (default: monotonic milliseconds).
    """

    def __init__(self, config: NamesrvConfig, *, clock_ms: Callable[[], int] = monotonic_ms) -> None:
        self._config = config
        self.clock_ms = clock_ms
        self.route_info_manager = RouteInfoManager(
            clock_ms=clock_ms, broker_channel_expired_time_ms=config.broker_channel_expired_time_ms
        )
        self.kv_config_manager = KVConfigManager(config.resolved_kv_config_path)
        self.processor = DefaultRequestProcessor(self)
        self._server: RemotingServer | None = None
        self._scan_task: asyncio.Task[None] | None = None
        self._scan_wakeup: asyncio.Event | None = None

    # ------------------------------------------------------------------ configuration
    @property
    def config(self) -> NamesrvConfig:
        """The current configuration (UPDATE_NAMESRV_CONFIG replaces it)."""
        return self._config

    def update_config(self, props: Mapping[str, str]) -> None:
        """Apply Java properties (``Configuration.update``); unknown keys are ignored.

        ``orderMessageEnable``, the scan interval and the expiry time take effect at once;
        the listen address only on the next start (as in Java).
        """
        self._config = self._config.with_properties(props)
        self.route_info_manager.broker_channel_expired_time_ms = self._config.broker_channel_expired_time_ms
        if self._scan_wakeup is not None:
            self._scan_wakeup.set()

    # ------------------------------------------------------------------ lifecycle
    @property
    def port(self) -> int:
        """The bound port (the configured one before :meth:`start`)."""
        return self._server.port if self._server is not None else self._config.listen_port

    @property
    def addr(self) -> str:
        """``host:port`` for clients: 127.0.0.1 when bound to every interface."""
        host = self._config.host
        if host in ("0.0.0.0", "", "::"):
            host = "127.0.0.1"
        return f"{host}:{self.port}"

    @property
    def server(self) -> RemotingServer:
        """The remoting server (after :meth:`start`)."""
        if self._server is None:
            raise RuntimeError("name server is not started")
        return self._server

    async def start(self) -> None:
        """Load the KV table, listen, and start the expiry scan (``initialize`` + ``start``)."""
        if self._server is not None:
            return
        self.kv_config_manager.load()
        cfg = self._config
        server = RemotingServer(
            cfg.host,
            cfg.listen_port,
            name="namesrv",
            idle_timeout_s=float(cfg.server_channel_max_idle_time_seconds),
        )
        server.register_default_processor(self.processor)
        server.add_channel_listener(self._on_channel_close)
        await server.start()
        self._server = server
        self._scan_wakeup = asyncio.Event()
        self._scan_task = asyncio.get_running_loop().create_task(self._scan_loop(), name="namesrv-scan")
        log.info("The Name Server boot success. serializeType=JSON, listening on %s", self.addr)

    async def shutdown(self) -> None:
        """Stop the scan and the server (``NamesrvController.shutdown``)."""
        task, self._scan_task = self._scan_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        server, self._server = self._server, None
        if server is not None:
            await server.stop()

    # ------------------------------------------------------------------ housekeeping
    def _on_channel_close(self, channel: Channel) -> None:
        # BrokerHousekeepingService.onChannelClose/Exception/Idle -> onChannelDestroy.
        self.route_info_manager.on_channel_destroy(channel.remote_addr, channel)

    def scan_not_active_broker(self) -> int:
        """One expiry pass now: drop silent brokers and close their channels; the count."""
        expired = self.route_info_manager.scan_not_active_broker()
        for _addr, live in expired:
            if isinstance(live.channel, Channel):
                live.channel.close()
        return len(expired)

    async def _scan_loop(self) -> None:
        wakeup = self._scan_wakeup
        assert wakeup is not None
        # NamesrvController.initialize: scheduleAtFixedRate(scanNotActiveBroker, 5, 10 s).
        delay_s = self._config.scan_not_active_broker_interval_ms / 2000.0
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(wakeup.wait(), delay_s)
            wakeup.clear()
            try:
                self.scan_not_active_broker()
            except Exception:
                log.exception("scanNotActiveBroker failed")
            delay_s = self._config.scan_not_active_broker_interval_ms / 1000.0


class NamesrvThread:
    """Runs a :class:`NamesrvController` on its own event loop in a named thread.

    :meth:`start` returns once the server listens (re-raising a bind or load error);
    :meth:`stop` shuts it down and joins the thread; :meth:`call` runs a function on the
    loop (the way to touch the controller's tables from another thread consistently).
    """

    def __init__(self, controller: NamesrvController, *, name: str = "namesrv-loop") -> None:
        self.controller = controller
        self.name = name
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def addr(self) -> str:
        """The controller's client-facing ``host:port``."""
        return self.controller.addr

    def start(self, timeout_s: float = 10.0) -> None:
        """Start the thread and wait until the name server listens."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise TimeoutError(f"name server did not start within {timeout_s} s")
        if self._error is not None:
            self._thread.join(timeout_s)
            self._thread = None
            raise self._error

    def call(self, fn: Callable[[], Any], timeout_s: float = 10.0) -> Any:
        """Call ``fn()`` on the name server's loop and return its result."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("name server thread is not started")

        async def _run() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(_run(), loop).result(timeout_s)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Shut the name server down and join the thread."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self.controller.shutdown(), loop).result(timeout_s)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout_s)
            self._thread = None

    def __enter__(self) -> NamesrvThread:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.controller.start())
            except BaseException as exc:
                self._error = exc
                return
            finally:
                self._ready.set()
            loop.run_forever()
            loop.run_until_complete(self.controller.shutdown())
        finally:
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                asyncio.set_event_loop(None)
                loop.close()
