"""An embedded RocketMQ cluster of real rocketq processes on 127.0.0.1, for tests and demos.

``EmbeddedCluster`` starts ``python -m rocketq.cli.main server`` (one name server and one
broker in one process) or, for several brokers (or ``separate_namesrv=True``), one
``namesrv`` process and one ``broker`` process per broker (``broker-a``, ``broker-b``, ...,
each with its own store under ``store_dir``). Ports are OS-assigned; each process writes
its ready line to a file the cluster polls. :meth:`EmbeddedCluster.start` returns once every
broker is registered with the name server.

Invariants:

* Each child's stderr (its log) goes to a file under the store dir; a child that dies or
  does not get ready in time raises :class:`ClusterError` carrying the tail of that log.
* :meth:`EmbeddedCluster.stop` sends SIGTERM and waits (SIGKILL after ``stop_timeout_s``);
  no child outlives ``stop()`` or the ``with`` block. A temporary store dir is removed.
* :meth:`restart_broker` reuses the broker's store and port (for ``server`` mode, the name
  server's port too), so clients reconnect to the same addresses.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import ssl
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from rocketq.errors import RocketqError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    CreateTopicRequestHeader,
    GetRouteInfoRequestHeader,
    PutKVConfigRequestHeader,
)
from rocketq.protocol.mixall import AUTO_CREATE_TOPIC_KEY_TOPIC
from rocketq.protocol.route import ClusterInfo, TopicRouteData
from rocketq.remoting.client import RemotingClient, RpcHook

__all__ = ["ClusterError", "EmbeddedCluster"]

log = logging.getLogger(__name__)

_MIB = 1024 * 1024
#: NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG
_ORDER_TOPIC_NAMESPACE = "ORDER_TOPIC_CONFIG"
_RPC_TIMEOUT_MS = 5000


class ClusterError(RocketqError):
    """A cluster process failed to start, died, or an admin call failed."""


@dataclass
class _Proc:
    role: str  # "server", "namesrv" or "broker"
    name: str
    args: list[str]
    ready_file: Path
    log_file: Path
    popen: subprocess.Popen[bytes] | None = None
    ready: dict[str, object] = field(default_factory=dict)

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "<no log>"
        return "\n".join(text.splitlines()[-lines:])


class EmbeddedCluster:
    """Name server + brokers as child processes; a context manager.

    ``broker_conf``: extra ``broker.conf`` keys for every broker (e.g.
    ``{"flushDiskType": "SYNC_FLUSH", "autoCreateTopicEnable": "false"}``);
    ``mapped_file_size_commit_log``: commit-log segment size (16 MiB keeps tests light).
    ``namesrv_conf``: keys for a separate name server (``server`` mode applies
    ``broker_conf`` to both, e.g. ``aclEnable``); ``env``: extra environment of every child
    (e.g. ``ROCKETMQ_HOME`` for plain_acl.yml); ``rpc_hook``/``ssl_context``: how the
    cluster's own admin client signs and encrypts (a secured cluster).
    """

    def __init__(
        self,
        *,
        brokers: int = 1,
        store_dir: str | Path | None = None,
        broker_conf: Mapping[str, str] | None = None,
        mapped_file_size_commit_log: int = 16 * _MIB,
        separate_namesrv: bool = False,
        start_timeout_s: float = 30.0,
        stop_timeout_s: float = 15.0,
        python: str = sys.executable,
        namesrv_conf: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        rpc_hook: RpcHook | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        if not 1 <= brokers <= 26:
            raise ValueError(f"brokers must be 1..26, got {brokers}")
        self.brokers = brokers
        self._temp = store_dir is None
        self.store_dir = (
            Path(tempfile.mkdtemp(prefix="rocketq-cluster-")) if store_dir is None else Path(store_dir)
        )
        self.broker_conf = dict(broker_conf or {})
        self.broker_conf.setdefault("mappedFileSizeCommitLog", str(mapped_file_size_commit_log))
        self.separate = separate_namesrv or brokers > 1
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.python = python
        self.namesrv_conf = dict(namesrv_conf or {})
        self.env = dict(env or {})
        self._rpc_hook = rpc_hook
        self._ssl_context = ssl_context
        self.broker_names = [f"broker-{string.ascii_lowercase[i]}" for i in range(brokers)]
        self.namesrv_addr = ""
        self.broker_addrs: list[str] = []
        self._namesrv: _Proc | None = None
        self._brokers: list[_Proc] = []
        self._client: RemotingClient | None = None
        self._started = False
        #: Exit status of every process stopped so far, by name ("namesrv", "broker-a", ...).
        self.exit_codes: dict[str, int | None] = {}

    # ------------------------------------------------------------------ context manager
    def __enter__(self) -> EmbeddedCluster:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start every process; returns once each broker is registered with the name server."""
        if self._started:
            return
        self._started = True
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self._client = RemotingClient(
            name="embedded-cluster", rpc_hook=self._rpc_hook, ssl_context=self._ssl_context
        )
        self._client.start()
        try:
            if self.separate:
                self._start_separate()
            else:
                self._start_server()
            self.wait_registered()
        except BaseException:
            self.stop()
            raise

    def _set_args(self) -> list[str]:
        out: list[str] = []
        for key, value in self.broker_conf.items():
            out += ["--set", f"{key}={value}"]
        return out

    def _start_server(self) -> None:
        store = self.store_dir / self.broker_names[0]
        proc = _Proc(
            role="server",
            name=self.broker_names[0],
            args=[
                "server",
                "--host",
                "127.0.0.1",
                "--namesrv-port",
                "0",
                "--broker-port",
                "0",
                "--store",
                str(store),
                "--broker-name",
                self.broker_names[0],
                *self._set_args(),
            ],
            ready_file=self.store_dir / f"{self.broker_names[0]}.ready",
            log_file=self.store_dir / f"{self.broker_names[0]}.log",
        )
        self._brokers = [proc]
        self._launch(proc)
        self.namesrv_addr = str(proc.ready["namesrv"])
        brokers = proc.ready["brokers"]
        assert isinstance(brokers, list)
        self.broker_addrs = [str(brokers[0])]
        # a restart keeps both ports
        self._pin_server_ports(proc)

    def _pin_server_ports(self, proc: _Proc) -> None:
        ns_port = self.namesrv_addr.rsplit(":", 1)[1]
        br_port = self.broker_addrs[0].rsplit(":", 1)[1]
        args = proc.args
        args[args.index("--namesrv-port") + 1] = ns_port
        args[args.index("--broker-port") + 1] = br_port

    def _start_separate(self) -> None:
        ns = _Proc(
            role="namesrv",
            name="namesrv",
            args=[
                "namesrv",
                "--host",
                "127.0.0.1",
                "-p",
                "0",
                "--kv-config",
                str(self.store_dir / "namesrv" / "kvConfig.json"),
                *(arg for key, value in self.namesrv_conf.items() for arg in ("--set", f"{key}={value}")),
            ],
            ready_file=self.store_dir / "namesrv.ready",
            log_file=self.store_dir / "namesrv.log",
        )
        self._namesrv = ns
        self._launch(ns)
        self.namesrv_addr = str(ns.ready["namesrv"])
        procs: list[_Proc] = []
        for name in self.broker_names:
            procs.append(
                _Proc(
                    role="broker",
                    name=name,
                    args=[
                        "broker",
                        "--host",
                        "127.0.0.1",
                        "-p",
                        "0",
                        "-n",
                        self.namesrv_addr,
                        "--store",
                        str(self.store_dir / name),
                        "--broker-name",
                        name,
                        *self._set_args(),
                    ],
                    ready_file=self.store_dir / f"{name}.ready",
                    log_file=self.store_dir / f"{name}.log",
                )
            )
        # start all brokers, then wait for each
        for proc in procs:
            self._spawn(proc)
        for proc in procs:
            self._await_ready(proc)
        self._brokers = procs
        self.broker_addrs = [str(p.ready["broker"]) for p in procs]
        for proc, addr in zip(procs, self.broker_addrs, strict=False):
            proc.args[proc.args.index("-p") + 1] = addr.rsplit(":", 1)[1]

    def _spawn(self, proc: _Proc) -> None:
        proc.ready_file.unlink(missing_ok=True)
        proc.ready = {}
        log_fh = open(proc.log_file, "ab")  # noqa: SIM115 - handed to the child
        try:
            proc.popen = subprocess.Popen(
                [self.python, "-m", "rocketq.cli.main", *proc.args, "--ready-file", str(proc.ready_file)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log_fh,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
            )
        finally:
            log_fh.close()

    def _await_ready(self, proc: _Proc) -> None:
        assert proc.popen is not None
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if proc.ready_file.exists():
                try:
                    data = json.loads(proc.ready_file.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    data = None
                if isinstance(data, dict):
                    proc.ready = data
                    return
            code = proc.popen.poll()
            if code is not None:
                raise ClusterError(f"{proc.name} exited with {code} before it was ready:\n{proc.log_tail()}")
            time.sleep(0.02)
        raise ClusterError(f"{proc.name} not ready within {self.start_timeout_s} s:\n{proc.log_tail()}")

    def _launch(self, proc: _Proc) -> None:
        self._spawn(proc)
        self._await_ready(proc)

    def _terminate(self, proc: _Proc, sig: int = signal.SIGTERM) -> int | None:
        popen = proc.popen
        if popen is None:
            return None
        if popen.poll() is None:
            popen.send_signal(sig)
            try:
                popen.wait(self.stop_timeout_s)
            except subprocess.TimeoutExpired:
                log.error(
                    "%s did not stop within %.1f s, killing it:\n%s",
                    proc.name,
                    self.stop_timeout_s,
                    proc.log_tail(),
                )
                popen.kill()
                popen.wait(self.stop_timeout_s)
        proc.popen = None
        self.exit_codes[proc.name] = popen.returncode
        return popen.returncode

    def stop(self) -> None:
        """SIGTERM every process (brokers first) and wait; remove a temporary store dir."""
        if not self._started:
            return
        self._started = False
        for proc in self._brokers:
            self._terminate(proc)
        if self._namesrv is not None:
            self._terminate(self._namesrv)
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._temp:
            shutil.rmtree(self.store_dir, ignore_errors=True)

    def broker_pid(self, index: int = 0) -> int:
        """The OS pid of broker ``index`` (the ``rocketq server`` process in single-process mode)."""
        popen = self._brokers[index].popen
        if popen is None:
            raise ClusterError(f"broker {index} is not running")
        return popen.pid

    def stop_broker(self, index: int = 0) -> int | None:
        """SIGTERM one broker process and return its exit status (0 after a clean shutdown)."""
        return self._terminate(self._brokers[index])

    def kill_broker(self, index: int = 0) -> None:
        """SIGKILL one broker process (in ``server`` mode this also kills the name server)."""
        self._terminate(self._brokers[index], signal.SIGKILL)

    def restart_broker(self, index: int = 0) -> None:
        """Stop the broker if it runs (SIGTERM), start it again on the same store and port."""
        proc = self._brokers[index]
        self._terminate(proc)
        self._launch(proc)
        self.wait_registered()

    # ------------------------------------------------------------------ admin helpers
    @property
    def client(self) -> RemotingClient:
        if self._client is None:
            raise ClusterError("cluster is not started")
        return self._client

    def invoke(
        self, addr: str, request: RemotingCommand, timeout_ms: int = _RPC_TIMEOUT_MS
    ) -> RemotingCommand:
        """A synchronous request to any process of the cluster."""
        return self.client.invoke_sync(addr, request, timeout_ms)

    def cluster_info(self) -> ClusterInfo:
        response = self.invoke(
            self.namesrv_addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
        )
        if response.code != ResponseCode.SUCCESS:
            raise ClusterError(f"GET_BROKER_CLUSTER_INFO: {response.code} {response.remark}")
        return ClusterInfo.from_json(response.body)

    def route(self, topic: str) -> TopicRouteData | None:
        """The name server's route of ``topic``, None on TOPIC_NOT_EXIST."""
        request = RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic).to_ext_fields()
        )
        response = self.invoke(self.namesrv_addr, request)
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        if response.code != ResponseCode.SUCCESS:
            raise ClusterError(f"GET_ROUTEINFO_BY_TOPIC {topic}: {response.code} {response.remark}")
        return TopicRouteData.from_json(response.body)

    def wait_registered(self, timeout_s: float | None = None) -> None:
        """Wait until every broker is in the name server's cluster info at its address."""
        deadline = time.monotonic() + (timeout_s or self.start_timeout_s)
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                info = self.cluster_info()
                ok = all(
                    name in info.broker_addr_table
                    and addr in info.broker_addr_table[name].broker_addrs.values()
                    for name, addr in zip(self.broker_names, self.broker_addrs, strict=False)
                )
                if ok:
                    return
            except RocketqError as exc:
                last = exc
            time.sleep(0.05)
        raise ClusterError(f"brokers not registered within the timeout (last error: {last})")

    def create_topic(self, topic: str, queue_nums: int = 4, *, perm: int = 6, order: bool = False) -> None:
        """UPDATE_AND_CREATE_TOPIC on every broker, then wait until the name server routes it.

        ``order=True`` also stores ``ORDER_TOPIC_CONFIG`` on the name server, as
        ``mqadmin updateTopic -o true`` does.
        """
        header = CreateTopicRequestHeader(
            topic=topic,
            default_topic=AUTO_CREATE_TOPIC_KEY_TOPIC,
            read_queue_nums=queue_nums,
            write_queue_nums=queue_nums,
            perm=perm,
            topic_filter_type="SINGLE_TAG",
            topic_sys_flag=0,
            order=order,
        )
        for addr in self.broker_addrs:
            response = self.invoke(
                addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
            )
            if response.code != ResponseCode.SUCCESS:
                raise ClusterError(f"create topic {topic} on {addr}: {response.code} {response.remark}")
        if order:
            conf = ";".join(f"{name}:{queue_nums}" for name in self.broker_names)
            kv = PutKVConfigRequestHeader(namespace=_ORDER_TOPIC_NAMESPACE, key=topic, value=conf)
            response = self.invoke(
                self.namesrv_addr, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, kv.to_ext_fields())
            )
            if response.code != ResponseCode.SUCCESS:
                raise ClusterError(f"order conf of {topic}: {response.code} {response.remark}")
        self.wait_route(topic, queue_nums)

    def wait_route(
        self, topic: str, queue_nums: int | None = None, timeout_s: float = 10.0
    ) -> TopicRouteData:
        """Wait until the route of ``topic`` lists every broker (with ``queue_nums`` write queues)."""
        deadline = time.monotonic() + timeout_s
        while True:
            route = self.route(topic)
            if route is not None:
                by_name = {q.broker_name: q for q in route.queue_datas}
                if all(
                    name in by_name and (queue_nums is None or by_name[name].write_queue_nums == queue_nums)
                    for name in self.broker_names
                ):
                    return route
            if time.monotonic() >= deadline:
                raise ClusterError(f"route of {topic} not complete within {timeout_s} s: {route}")
            time.sleep(0.05)
