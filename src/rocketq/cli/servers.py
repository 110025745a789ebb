"""The server subcommands: ``rocketq namesrv``, ``rocketq broker`` and ``rocketq server``.

Mirrors ``NamesrvStartup`` and ``BrokerStartup``: a name server, a broker configured by a
Java ``broker.conf``, or both in one process (``server``, used by the embedded cluster).

Contract (the embedded cluster relies on it):

* ``--metrics-port P`` (broker and server; needs ``rocketq[metrics]``; or RocketMQ 5's
  broker.conf keys ``metricsExporterType=PROM`` and ``metricsPromExporterPort``) also serves
  Prometheus metrics (:mod:`rocketq.broker.metrics`) and adds ``"metrics": "host:port"`` to
  the ready line.
* When ready, each command prints ONE JSON line on stdout (and, with ``--ready-file F``,
  writes the same line to ``F`` atomically): ``namesrv`` -> ``{"namesrv": "host:port"}``;
  ``broker`` -> ``{"broker": "ip:port", "broker_name": ..., "namesrv": ...}``; ``server`` ->
  ``{"namesrv": "127.0.0.1:P1", "brokers": ["127.0.0.1:P2"]}``. "Ready" means listening
  and, for a broker, registered with its name servers. Every ready line also says which event
  loop serves (``"event_loop": "uvloop"`` or ``"asyncio"``) and whether the mypyc build runs
  (``"compiled": true``).
* The servers run on uvloop when it is installed (``rocketq[speed]``), unless
  ``ROCKETQ_NO_UVLOOP=1`` (:mod:`rocketq.common.event_loop`).
* Port 0 means OS-assigned. All three bind 127.0.0.1 unless told otherwise (``--host``,
  or ``listenHost`` in broker.conf / ``--set``): a non-loopback bind is always explicit.
* Logs go to stderr through :mod:`logging`, or with ``--log-file F`` to ``F`` rotated by
  size (``--log-max-mb``, default 100 MiB, ``--log-backups`` older files, default 5), so
  a flood of bad input cannot fill the disk with log lines.
* SIGINT/SIGTERM trigger a clean shutdown (broker: unregister, persist, close the store),
  after which the process exits with status 0.
* A server that cannot start prints ONE line ``error: ...`` on stderr and exits 1: a store
  (``<store>/lock``) or KV config file locked by a running server, a port in use, an
  unknown ``--set`` key (the message names the known ``broker.conf`` keys) or a bad value.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import logging
import logging.handlers
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from rocketq.common.event_loop import run_on_server_loop
from rocketq.common.file_lock import FileLockedError
from rocketq.errors import IllegalArgumentError
from rocketq.remoting.tls import TlsConfig, TlsMode

__all__ = ["LOG_FORMAT", "LOG_LEVELS", "register"]

log = logging.getLogger("rocketq.cli.servers")

#: The default bind address of every server command.
LOOPBACK = "127.0.0.1"


def register(subparsers: Any) -> None:
    """Add the ``namesrv``, ``broker`` and ``server`` subcommands to ``subparsers``."""
    p = subparsers.add_parser("namesrv", help="run a name server")
    p.add_argument("-p", "--port", type=int, default=9876, help="listen port (0 = OS-assigned; default 9876)")
    p.add_argument("--host", default=LOOPBACK, help="bind address (default 127.0.0.1; 0.0.0.0 = all)")
    p.add_argument("--kv-config", default=None, help="kvConfig.json path (default ~/namesrv/kvConfig.json)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="name server key, e.g. aclEnable=true, aclPlainFile=..., tls.server.mode=permissive",
    )
    p.add_argument("--ready-file", default=None, help="also write the ready line to this file")
    _add_log_options(p)
    p.set_defaults(func=_cmd_namesrv)

    b = subparsers.add_parser("broker", help="run a broker")
    b.add_argument("-c", "--config", default=None, help="broker.conf (Java properties)")
    b.add_argument("-n", "--namesrv-addr", default=None, help="name servers, ';'-separated")
    b.add_argument("-p", "--port", type=int, default=None, help="listen port (0 = OS-assigned)")
    b.add_argument(
        "--host",
        default=None,
        help="bind address, also brokerIP1 unless the config sets it (default: listenHost, else 127.0.0.1)",
    )
    b.add_argument("--store", default=None, help="storePathRootDir")
    b.add_argument("--broker-name", default=None)
    b.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra broker.conf key")
    b.add_argument("--ready-file", default=None)
    _add_log_options(b)
    _add_metrics_port(b)
    b.set_defaults(func=_cmd_broker)

    s = subparsers.add_parser("server", help="run a name server and a broker in one process")
    s.add_argument("--host", default=LOOPBACK, help="bind address and brokerIP1 (default 127.0.0.1)")
    s.add_argument("--namesrv-port", type=int, default=9876)
    s.add_argument("--broker-port", type=int, default=10911)
    s.add_argument("--store", default=os.path.join(os.path.expanduser("~"), "store"), help="storePathRootDir")
    s.add_argument("-c", "--config", default=None, help="broker.conf (Java properties)")
    s.add_argument("--broker-name", default=None)
    s.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra broker.conf key (aclEnable, aclPlainFile and tls.server.* apply to the name server too)",
    )
    s.add_argument("--ready-file", default=None)
    _add_log_options(s)
    _add_metrics_port(s)
    s.set_defaults(func=_cmd_server)


# ---------------------------------------------------------------------- helpers
#: The levels ``--log-level`` accepts (stdlib :mod:`logging` names).
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
#: The servers' log line: time, level, logger name (``rocketq.broker...``), message.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _add_log_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=LOG_LEVELS,
        help="threshold of the log (default INFO)",
    )
    parser.add_argument(
        "--log-file", default=None, help="log to this file, rotated by size (default: stderr)"
    )
    parser.add_argument("--log-max-mb", type=float, default=100.0, help="rotate the log file at this size")
    parser.add_argument("--log-backups", type=int, default=5, help="rotated log files kept")


def _add_metrics_port(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve Prometheus metrics at /metrics on this port (0 = OS-assigned; off by default; "
        "needs rocketq[metrics])",
    )


def _metrics_port(args: argparse.Namespace, config: Any) -> int | None:
    """``--metrics-port``, else the broker config's ``metricsExporterType=PROM`` and
    ``metricsPromExporterPort`` (RocketMQ 5's keys), else None (off).

    Fails fast, before anything starts, when metrics are asked for without prometheus_client.
    """
    port: int | None = args.metrics_port
    if port is None and config.metrics_exporter_type == "PROM":
        port = config.metrics_prom_exporter_port
    if port is None:
        return None
    import importlib.util

    if importlib.util.find_spec("prometheus_client") is None:
        raise IllegalArgumentError("broker metrics need prometheus_client: pip install 'rocketq[metrics]'")
    return port


def _start_metrics(port: int | None, broker: Any, host: str) -> Any:
    """The broker's metrics server on ``port``, or None when off."""
    if port is None:
        return None
    from rocketq.broker.metrics import start_metrics_server

    server = start_metrics_server(broker, port, host)
    log.info("metrics at http://%s/metrics", server.addr)
    return server


def _setup_logging(args: argparse.Namespace) -> None:
    handler: logging.Handler
    if args.log_file:
        if args.log_max_mb <= 0 or args.log_backups < 0:
            raise SystemExit("--log-max-mb must be > 0 and --log-backups >= 0")
        handler = logging.handlers.RotatingFileHandler(
            args.log_file,
            maxBytes=int(args.log_max_mb * 1024 * 1024),
            backupCount=args.log_backups,
            encoding="utf-8",
        )
    else:
        handler = logging.StreamHandler(sys.stderr)
    logging.basicConfig(
        force=True, handlers=[handler], level=getattr(logging, args.log_level), format=LOG_FORMAT
    )


def _fail(text: str) -> int:
    """One ``error: ...`` line on stderr; the exit status of a server that cannot start."""
    sys.stderr.write(f"error: {' '.join(text.split())}\n")
    sys.stderr.flush()
    return 1


def _announce(line: dict[str, object], ready_file: str | None) -> None:
    from rocketq import _build
    from rocketq.common.event_loop import loop_name

    # which event loop and which build serve (tests and the benchmark read them)
    line = {**line, "event_loop": loop_name(asyncio.get_running_loop()), "compiled": _build.state().compiled}
    text = json.dumps(line)
    if ready_file:
        tmp = ready_file + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        os.replace(tmp, ready_file)
    print(text, flush=True)


def _parse_sets(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise IllegalArgumentError(f"--set expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


def _run(body: Callable[[asyncio.Event], Awaitable[None]], *, tls: bool = False) -> int:
    """Run ``body(stop_event)`` with SIGINT/SIGTERM setting the event; 0 on a clean exit.

    On uvloop when installed, except a server with TLS (``tls``): its handshake (the peeking
    protocol and ``start_tls`` of :mod:`rocketq.remoting.server`) times out on uvloop, so TLS
    servers stay on asyncio's loop.

    A server that cannot start says why in one ``error:`` line and exits 1: its store or KV
    file is locked by a running server, its port is taken, or its configuration is wrong.
    Anything else is logged with its traceback (exit 1 too).
    """

    async def runner() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await body(stop)

    try:
        run_on_server_loop(runner(), uvloop=not tls)
    except (FileLockedError, IllegalArgumentError) as exc:
        return _fail(str(exc))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            # asyncio's text names the address: "error while attempting to bind on address ..."
            return _fail(
                f"port already in use: {exc.strerror or exc}; is another server running? "
                "Pick another port (0 = any free port)"
            )
        log.exception("server failed")
        return 1
    except Exception:
        log.exception("server failed")
        return 1
    return 0


def _broker_config(args: argparse.Namespace, *, namesrv_addr: str | None, host: str | None) -> Any:
    from rocketq.broker.config import (
        UPDATED_KEYS_FILE,
        BrokerConfig,
        config_file_path,
        load_properties,
        load_updated_keys,
    )

    props: dict[str, str] = load_properties(args.config) if args.config else {}
    overrides = _parse_sets(args.set)
    if host is None and "listenHost" not in props and "listenHost" not in overrides:
        host = LOOPBACK  # like `rocketq server`: all interfaces only when asked for
    if host is not None:
        overrides.setdefault("listenHost", host)
        if "brokerIP1" not in props and "brokerIP1" not in overrides:
            overrides["brokerIP1"] = "127.0.0.1" if host in ("0.0.0.0", "") else host
    if namesrv_addr is not None:
        overrides["namesrvAddr"] = namesrv_addr
    port = getattr(args, "port", None)
    if port is None:
        port = getattr(args, "broker_port", None)
    if port is not None:
        overrides["listenPort"] = str(port)
    if args.store:
        overrides["storePathRootDir"] = args.store
    if args.broker_name:
        overrides["brokerName"] = args.broker_name
    config = BrokerConfig.from_properties(props, overrides)
    # keys changed at run time (updateBrokerConfig) win over broker.conf, lose to the options
    updated = load_updated_keys(config.store_path_root_dir)
    if not updated:
        return config
    log.info(
        "broker settings changed by update-config earlier (%s): %s",
        config_file_path(config.store_path_root_dir, UPDATED_KEYS_FILE),
        ", ".join(f"{k}={v}" for k, v in updated.items()),
    )
    return BrokerConfig.from_properties({**props, **updated}, overrides)


def _namesrv_keys(sets: dict[str, str]) -> dict[str, str]:
    """The ``--set`` keys of ``rocketq server`` that its name server shares with the broker."""
    return {
        k: v for k, v in sets.items() if k in ("aclEnable", "aclPlainFile") or k.startswith("tls.server.")
    }


def _tls(config: TlsConfig) -> bool:
    """Whether a server with these settings speaks TLS, as a server or towards its name servers."""
    return config.server_mode is not TlsMode.DISABLED or config.enable


# ---------------------------------------------------------------------- commands
def _cmd_namesrv(args: argparse.Namespace) -> int:
    _setup_logging(args)
    from rocketq.namesrv.config import NamesrvConfig
    from rocketq.namesrv.namesrv import NamesrvController

    try:
        config = NamesrvConfig(
            host=args.host, listen_port=args.port, kv_config_path=args.kv_config
        ).with_properties(_parse_sets(args.set))
    except IllegalArgumentError as exc:
        return _fail(str(exc))

    async def body(stop: asyncio.Event) -> None:
        namesrv = NamesrvController(config)
        await namesrv.start()
        try:
            _announce({"namesrv": namesrv.addr}, args.ready_file)
            await stop.wait()
            log.info("name server: shutting down")
        finally:
            await namesrv.shutdown()

    return _run(body, tls=_tls(config.tls))


def _cmd_broker(args: argparse.Namespace) -> int:
    _setup_logging(args)
    from rocketq.broker.broker import BrokerController

    try:
        config = _broker_config(args, namesrv_addr=args.namesrv_addr, host=args.host)
        metrics_port = _metrics_port(args, config)
    except (IllegalArgumentError, OSError) as exc:
        return _fail(str(exc))

    async def body(stop: asyncio.Event) -> None:
        broker = BrokerController(config)
        metrics = None
        try:
            await broker.start()
            metrics = _start_metrics(metrics_port, broker, config.listen_host)
            line: dict[str, object] = {
                "broker": broker.broker_addr,
                "broker_name": config.broker_name,
                "namesrv": config.namesrv_addr,
            }
            if metrics is not None:
                line["metrics"] = metrics.addr
            _announce(line, args.ready_file)
            await stop.wait()
            log.info("broker: shutting down")
        finally:
            if metrics is not None:
                metrics.close()
            await broker.shutdown()

    return _run(body, tls=_tls(config.tls))


def _cmd_server(args: argparse.Namespace) -> int:
    _setup_logging(args)
    from rocketq.broker.broker import BrokerController
    from rocketq.namesrv.config import NamesrvConfig
    from rocketq.namesrv.namesrv import NamesrvController

    try:
        # the broker's settings are checked before anything starts; the name server's
        # address, known once it listens, is filled in below
        checked = _broker_config(args, namesrv_addr=None, host=args.host)
        metrics_port = _metrics_port(args, checked)
        namesrv_config = NamesrvConfig(
            host=args.host,
            listen_port=args.namesrv_port,
            kv_config_path=os.path.join(args.store, "namesrv", "kvConfig.json"),
        ).with_properties(_namesrv_keys(_parse_sets(args.set)))
    except (IllegalArgumentError, OSError) as exc:
        return _fail(str(exc))
    if namesrv_config.acl_enable and not (checked.access_key and checked.secret_key):
        return _fail(
            "aclEnable=true: the name server only takes registrations signed by an admin "
            "account; give the broker one with --set accessKey=... --set secretKey=..."
        )

    async def body(stop: asyncio.Event) -> None:
        namesrv = NamesrvController(namesrv_config)
        await namesrv.start()
        broker: BrokerController | None = None
        metrics = None
        try:
            config = _broker_config(args, namesrv_addr=namesrv.addr, host=args.host)
            broker = BrokerController(config)
            await broker.start()
            metrics = _start_metrics(metrics_port, broker, args.host)
            line: dict[str, object] = {"namesrv": namesrv.addr, "brokers": [broker.broker_addr]}
            if metrics is not None:
                line["metrics"] = metrics.addr
            _announce(line, args.ready_file)
            await stop.wait()
            log.info("server: shutting down")
        finally:
            if metrics is not None:
                metrics.close()
            if broker is not None:
                await broker.shutdown()
            await namesrv.shutdown()

    return _run(body, tls=_tls(checked.tls) or _tls(namesrv_config.tls))
