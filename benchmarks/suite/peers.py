"""Start and stop the servers under test as child processes on free loopback ports.

* :class:`RedisServer` - Debian's ``redis-server``: ``--save ""`` (no RDB snapshots), AOF on
  with ``appendfsync everysec`` (:attr:`Variant.DEFAULT`) or ``always`` (DURABLE), AOF
  rewrites off, data in a temporary directory.
* :class:`NatsServer` - ``nats-server`` with JetStream and file storage in a temporary
  directory. DURABLE adds ``sync_interval: always`` where the server knows it (2.10+);
  older servers (Debian 12 ships 2.9.10) cannot fsync every write, which
  :attr:`NatsServer.durability_note` says and the report repeats.
* :class:`RocketqServer` - an :class:`~rocketq.testing.cluster.EmbeddedCluster` (name server
  and broker in one process); DURABLE sets ``flushDiskType=SYNC_FLUSH`` (the acks wait for
  the group commit, Java's policy; rocketq's defaults sync through native AIO, or on the loop
  while the sends come one per sync: ``syncFlushAdaptive``). System ``rocketq-onloop`` (:data:`ONLOOP_SYSTEM`, durable
  variant only) adds ``syncFlushOnLoop=true``: the broker syncs on its event loop, as Redis does
  under ``appendfsync always`` - the like-for-like policy, an opt-in of rocketq's.

Invariants: a server is ready when :meth:`start` returns (it answered on its port); every
child is SIGTERMed (SIGKILLed after 10 s) and its data dir removed by :meth:`stop`, also
when :meth:`start` fails. A missing binary or Python client is a :class:`PeerMissing`
carrying the install hint, never a silent skip.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from rocketq.testing.cluster import EmbeddedCluster

from .common import Variant

__all__ = [
    "ONLOOP_SYSTEM",
    "NatsServer",
    "PeerMissing",
    "RedisServer",
    "RocketqServer",
    "Server",
    "check_peer",
    "find_binary",
    "free_port",
    "make_server",
]

#: rocketq with ``syncFlushOnLoop=true`` (durable variant only; see the module docstring).
ONLOOP_SYSTEM = "rocketq-onloop"

_SEARCH_DIRS = ("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin", "/sbin", "/bin")


class PeerMissing(RuntimeError):
    """A peer's server binary or Python client is not installed."""


def find_binary(name: str, env_var: str) -> str | None:
    """``$env_var`` if set, else ``name`` on PATH or in the sbin/bin dirs (Debian puts
    ``nats-server`` in /usr/sbin, which a non-root PATH may lack)."""
    override = os.environ.get(env_var)
    if override:
        return override if os.access(override, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    for folder in _SEARCH_DIRS:
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK):
            return path
    return None


_PEERS = {
    # system: (binary, env override, python modules, apt package, pip packages)
    "redis": ("redis-server", "REDIS_SERVER", ("redis", "hiredis"), "redis-server", "redis[hiredis]"),
    "nats": ("nats-server", "NATS_SERVER", ("nats",), "nats-server", "nats-py"),
}


def check_peer(system: str) -> str:
    """The server binary of ``system`` ("redis" or "nats"); raises :class:`PeerMissing`."""
    binary, env_var, modules, apt, pip = _PEERS[system]
    path = find_binary(binary, env_var)
    problems = []
    if path is None:
        problems.append(f"{binary} not found (apt-get install {apt}, or set {env_var})")
    for module in modules:
        if importlib.util.find_spec(module) is None:
            problems.append(f"Python module {module} not installed (pip install '{pip}')")
    if problems:
        raise PeerMissing("; ".join(problems))
    assert path is not None
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_port(port: int, proc: subprocess.Popen[bytes], log_file: Path, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{_tail(log_file)}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server not listening on {port} within {timeout_s} s:\n{_tail(log_file)}")


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "<no log>"


def _version(binary: str) -> str:
    """``redis-server 7.0.15`` / ``nats-server 2.9.10`` from the binary's ``--version``."""
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except OSError as exc:
        return f"unknown ({exc})"
    text = (out.stdout or out.stderr).strip()
    # "Redis server v=7.0.15 sha=..." / "nats-server: v2.9.10"
    match = re.search(r"v=?(\d+\.\d+\.\d+)", text)
    name = os.path.basename(binary)
    return (
        f"{name} {match.group(1)}"
        if match
        else (text.splitlines()[0] if text else f"{name} (unknown version)")
    )


class Server:
    """Base of the three servers: a context manager with ``pid``, ``url`` and ``version``."""

    system = ""

    def __init__(self, variant: Variant) -> None:
        self.variant = variant
        self.pid = 0
        self.url = ""
        self.version = ""
        self.durability_note = ""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Server:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class _ChildServer(Server):
    """A server binary run as a child process with a temporary data dir."""

    def __init__(self, variant: Variant, binary: str) -> None:
        super().__init__(variant)
        self.binary = binary
        self.version = _version(binary)
        self.port = 0
        self.data_dir = Path()
        self._proc: subprocess.Popen[bytes] | None = None

    def _args(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> None:
        self.data_dir = Path(tempfile.mkdtemp(prefix=f"bench-{self.system}-"))
        self.port = free_port()
        log_file = self.data_dir / "server.log"
        with open(log_file, "wb") as log_fh:
            self._proc = subprocess.Popen(
                [self.binary, *self._args()],
                stdin=subprocess.DEVNULL,
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                cwd=self.data_dir,
            )
        self.pid = self._proc.pid
        _wait_port(self.port, self._proc, log_file)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        if self.data_dir != Path():
            shutil.rmtree(self.data_dir, ignore_errors=True)


class RedisServer(_ChildServer):
    """``redis-server`` on a free port; ``url`` is ``redis://127.0.0.1:<port>``."""

    system = "redis"

    def __init__(self, variant: Variant, binary: str | None = None) -> None:
        super().__init__(variant, binary or check_peer("redis"))
        fsync = "always" if variant is Variant.DURABLE else "everysec"
        self.durability_note = f"AOF, appendfsync {fsync}"

    def _args(self) -> list[str]:
        self.url = f"redis://127.0.0.1:{self.port}"
        fsync = "always" if self.variant is Variant.DURABLE else "everysec"
        return [
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.data_dir),
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            fsync,
            "--auto-aof-rewrite-percentage",
            "0",
            "--protected-mode",
            "no",
            "--daemonize",
            "no",
        ]


def _nats_supports_sync(version: str) -> bool:
    match = re.search(r"v?(\d+)\.(\d+)", version)
    return bool(match) and (int(match.group(1)), int(match.group(2))) >= (2, 10)  # type: ignore[union-attr]


class NatsServer(_ChildServer):
    """``nats-server -js`` on a free port; ``url`` is ``nats://127.0.0.1:<port>``."""

    system = "nats"

    def __init__(self, variant: Variant, binary: str | None = None) -> None:
        super().__init__(variant, binary or check_peer("nats"))
        self.can_sync = _nats_supports_sync(self.version)
        if variant is Variant.DEFAULT:
            self.durability_note = "file storage, fsync every 2 min (server default)"
        elif self.can_sync:
            self.durability_note = "file storage, sync_interval: always"
        else:
            self.durability_note = (
                "file storage; this version has no sync_interval (added in 2.10), so NOT fsynced per message"
            )

    def _args(self) -> list[str]:
        self.url = f"nats://127.0.0.1:{self.port}"
        store = self.data_dir / "js"
        sync = "\n  sync_interval: always" if self.variant is Variant.DURABLE and self.can_sync else ""
        conf = self.data_dir / "nats.conf"
        conf.write_text(
            f'listen: "127.0.0.1:{self.port}"\n'
            f'jetstream {{\n  store_dir: "{store}"\n  max_file_store: 8GB{sync}\n}}\n',
            encoding="utf-8",
        )
        return ["-c", str(conf)]


class RocketqServer(Server):
    """An :class:`EmbeddedCluster` in ``server`` mode; ``url`` is the name server address."""

    system = "rocketq"

    def __init__(
        self,
        variant: Variant,
        *,
        sync_on_loop: bool = False,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
        broker_conf: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(variant)
        if sync_on_loop and variant is not Variant.DURABLE:
            raise ValueError("syncFlushOnLoop only applies to the durable variant (SYNC_FLUSH)")
        conf = {"flushDiskType": "SYNC_FLUSH"} if variant is Variant.DURABLE else {}
        if sync_on_loop:
            self.system = ONLOOP_SYSTEM
            conf["syncFlushOnLoop"] = "true"
        conf.update(broker_conf or {})  # extra broker.conf keys (benchmarks/durable_ab.py --conf)
        # 128 MiB segments: 200k messages must not roll segments every few thousand sends
        # ``python``: another tree's interpreter (an A/B of two trees: benchmarks/durable_ab.py)
        self.cluster = EmbeddedCluster(
            broker_conf=conf, mapped_file_size_commit_log=128 * 1024 * 1024, python=python, env=env
        )
        self.durability_note = (
            "SYNC_FLUSH, syncFlushOnLoop=true (the sync on the broker's event loop, opt-in)"
            if sync_on_loop
            else "SYNC_FLUSH (group commit, the sync submitted by the loop through native AIO, made by the loop"
            " itself while sends come one per sync: the defaults)"
            if conf
            else "ASYNC_FLUSH (flush every 500 ms)"
        )
        from importlib.metadata import version

        from rocketq import _build
        from rocketq.common.event_loop import describe_server_loop

        build = "compiled (mypyc)" if _build.state().compiled else f"pure Python, {_build.state().reason}"
        self.version = f"rocketq {version('rocketq')}, {build}, server loop {describe_server_loop()}"

    def start(self) -> None:
        self.cluster.start()
        self.url = self.cluster.namesrv_addr
        self.pid = self.cluster.broker_pid()  # the one `rocketq server` process

    def stop(self) -> None:
        self.cluster.stop()


def make_server(system: str, variant: Variant) -> Server:
    """A not yet started server of ``system`` ("rocketq", "rocketq-onloop", "redis" or "nats")."""
    if system == "rocketq":
        return RocketqServer(variant)
    if system == ONLOOP_SYSTEM:
        return RocketqServer(variant, sync_on_loop=True)
    if system == "redis":
        return RedisServer(variant)
    if system == "nats":
        return NatsServer(variant)
    raise ValueError(f"unknown system {system!r}")
