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
* From start to shutdown the controller holds ``<kvConfig.json>.lock`` (rocketq only): a
  second name server process on the same KV file fails to start with ``FileLockedError``.
* With ``aclEnable`` (rocketq only; Java's name server has no ACL) every request but the
  reads passes :class:`~rocketq.acl.plain_access_validator.PlainAccessValidator` with the
  name-server rule (admin accounts only); ``tls.server.mode`` secures the listener.

:class:`NamesrvThread` hosts a controller on its own loop in a named thread, for tests
and for embedding in synchronous programs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping

from rocketq.acl.plain_access_validator import namesrv_rule
from rocketq.acl.plain_permission_manager import PlainPermissionManager
from rocketq.acl.security import install_server_security
from rocketq.common.file_lock import FileLock
from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.kv_config import KVConfigManager
from rocketq.namesrv.processor import DefaultRequestProcessor
from rocketq.namesrv.route_info import RouteInfoManager, monotonic_ms
from rocketq.remoting.server import Channel, LoopThread, RemotingServer

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
        #: rocketq only (Java has no such lock): two name servers of one machine must not
        #: rewrite one kvConfig.json, so the first holds ``<kvConfig.json>.lock``.
        self._kv_lock: FileLock | None = FileLock(
            config.resolved_kv_config_path + ".lock", f"the KV config {config.resolved_kv_config_path}"
        )
        self.processor = DefaultRequestProcessor(self)
        self._server: RemotingServer | None = None
        self._scan_task: asyncio.Task[None] | None = None
        self._scan_wakeup: asyncio.Event | None = None
        #: plain_acl.yml and its watch, with aclEnable (rocketq only).
        self.acl: PlainPermissionManager | None = None

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
        if self._kv_lock is not None:
            try:
                self._kv_lock.acquire()  # before reading: a refused name server touches nothing
            except OSError as exc:  # an unwritable home: the table still works until a put
                log.warning(
                    "cannot lock %s (%s); running without the KV config lock", self._kv_lock.path, exc
                )
                self._kv_lock = None
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
        self.acl = install_server_security(
            server,
            role="name server",
            acl_enable=cfg.acl_enable,
            acl_plain_file=cfg.acl_plain_file,
            tls=cfg.tls,
            rule=namesrv_rule,
        )
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
        if self._kv_lock is not None:
            self._kv_lock.release()
        acl, self.acl = self.acl, None
        if acl is not None:
            acl.shutdown()

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


class NamesrvThread(LoopThread):
    """Runs a :class:`NamesrvController` on its own event loop in a named thread.

    :meth:`start` returns once the server listens (re-raising a bind or load error);
    :meth:`stop` shuts it down and joins the thread; :meth:`call` runs a function on the
    loop (the way to touch the controller's tables from another thread consistently).
    """

    def __init__(self, controller: NamesrvController, *, name: str = "namesrv-loop") -> None:
        super().__init__(controller.start, controller.shutdown, name=name)
        self.controller = controller

    @property
    def addr(self) -> str:
        """The controller's client-facing ``host:port``."""
        return self.controller.addr
