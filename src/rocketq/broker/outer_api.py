"""The broker's calls to name servers: REGISTER_BROKER and UNREGISTER_BROKER.

Mirrors ``org.apache.rocketmq.broker.out.BrokerOuterAPI`` (4.9.7).

Invariants:

* A registration goes to every name server at once (one async request each, then a wait
  bounded by ``timeout_ms``), Java's ``registerBrokerAll`` with its CountDownLatch; a name
  server that fails or times out is logged and skipped, never raised.
* The header carries ``bodyCrc32`` = CRC32 of the exact body bytes & 0x7FFFFFFF
  (``UtilAll.crc32``) and ``compressed``; the body is the RegisterBrokerBody JSON (or its
  zlib form), so the frame matches golden/broker_register.jsonl.
* ``oneway`` registrations (after topic auto-creation) get no answer and return no result.
* Blocking: call from a worker thread, never from the broker's event loop.
"""

from __future__ import annotations

import concurrent.futures
import logging
import ssl
import time
import zlib
from dataclasses import dataclass

from rocketq.errors import RocketqError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from rocketq.protocol.route import KVTable, RegisterBrokerBody, TopicConfigSerializeWrapper
from rocketq.remoting.client import RemotingClient, RpcHook

__all__ = ["BrokerOuterAPI", "RegisterBrokerResult", "crc32"]

log = logging.getLogger(__name__)

#: BrokerOuterAPI.unregisterBroker timeout
_UNREGISTER_TIMEOUT_MS = 3000


def crc32(data: bytes) -> int:
    """``UtilAll.crc32``: CRC32 & 0x7FFFFFFF."""
    return zlib.crc32(data) & 0x7FFFFFFF


@dataclass(frozen=True)
class RegisterBrokerResult:
    """``RegisterBrokerResult``: what a name server answered (slaves learn their master)."""

    namesrv_addr: str
    ha_server_addr: str | None
    master_addr: str | None
    kv_table: KVTable | None


class BrokerOuterAPI:
    """Name-server calls of one broker; owns a :class:`RemotingClient` ("broker-outer")."""

    def __init__(
        self,
        namesrv_addrs: list[str] | None = None,
        *,
        client: RemotingClient | None = None,
        rpc_hook: RpcHook | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._given_client = client
        # For the owned client: signing (the broker's accessKey) and TLS (tls.enable).
        self._rpc_hook = rpc_hook
        self._ssl_context = ssl_context
        self._own: RemotingClient | None = None
        self.namesrv_addrs: list[str] = list(namesrv_addrs or [])

    @property
    def _client(self) -> RemotingClient:
        client = self._given_client or self._own
        if client is None:
            raise RuntimeError("BrokerOuterAPI is not started")
        return client

    def start(self) -> None:
        """Create and start the owned client (``broker-outer``) unless one was given."""
        if self._given_client is None and self._own is None:
            self._own = RemotingClient(
                name="broker-outer", rpc_hook=self._rpc_hook, ssl_context=self._ssl_context
            )
            self._own.start()

    def shutdown(self) -> None:
        """Close the owned client (joins its threads)."""
        own, self._own = self._own, None
        if own is not None:
            own.close()

    def update_name_server_address_list(self, addrs: str) -> None:
        """``updateNameServerAddressList``: a ``;``-separated list."""
        self.namesrv_addrs = [a.strip() for a in addrs.split(";") if a.strip()]

    # ------------------------------------------------------------------ register
    def register_broker_all(
        self,
        *,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        wrapper: TopicConfigSerializeWrapper,
        filter_server_list: list[str] | None = None,
        oneway: bool = False,
        timeout_ms: int = 6000,
        compressed: bool = False,
    ) -> list[RegisterBrokerResult]:
        """REGISTER_BROKER to every name server; the answers that arrived in time."""
        addrs = list(self.namesrv_addrs)
        if not addrs:
            return []
        body = RegisterBrokerBody(
            topic_config_serialize_wrapper=wrapper, filter_server_list=list(filter_server_list or [])
        ).encode(compressed)
        header = RegisterBrokerRequestHeader(
            broker_name=broker_name,
            broker_addr=broker_addr,
            cluster_name=cluster_name,
            ha_server_addr=ha_server_addr,
            broker_id=broker_id,
            compressed=compressed,
            body_crc32=crc32(body),
        )
        ext = header.to_ext_fields()
        if oneway:
            for addr in addrs:
                request = RemotingCommand.request(RequestCode.REGISTER_BROKER, dict(ext), body, oneway=True)
                try:
                    self._client.invoke_oneway(addr, request)
                except RocketqError as exc:
                    log.warning("register broker (oneway) to %s failed: %s", addr, exc)
            return []
        futures: dict[concurrent.futures.Future[RemotingCommand], str] = {}
        for addr in addrs:
            request = RemotingCommand.request(RequestCode.REGISTER_BROKER, dict(ext), body)
            try:
                futures[self._client.invoke_async(addr, request, timeout_ms)] = addr
            except RocketqError as exc:
                log.warning("register broker to %s failed: %s", addr, exc)
        deadline = time.monotonic() + timeout_ms / 1000.0
        done, _ = concurrent.futures.wait(futures, timeout=max(0.0, deadline - time.monotonic()))
        results: list[RegisterBrokerResult] = []
        for fut, addr in futures.items():
            if fut not in done:
                log.warning("register broker to %s: no answer within %d ms", addr, timeout_ms)
                continue
            try:
                response = fut.result()
            except Exception as exc:
                log.warning("register broker to %s failed: %s", addr, exc)
                continue
            if response.code != ResponseCode.SUCCESS:
                log.warning("register broker to %s refused: %d %s", addr, response.code, response.remark)
                continue
            rh = RegisterBrokerResponseHeader.from_ext_fields(response.ext_fields)
            kv: KVTable | None = None
            if response.body:
                try:
                    kv = KVTable.from_json(response.body)
                except RocketqError as exc:
                    log.warning("register broker to %s: bad KV table body: %s", addr, exc)
            log.info("register broker %s[%d] to name server %s OK", broker_name, broker_id, addr)
            results.append(RegisterBrokerResult(addr, rh.ha_server_addr, rh.master_addr, kv))
        return results

    def unregister_broker_all(
        self, *, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        """UNREGISTER_BROKER to every name server, one after another (3 s timeout each)."""
        header = UnRegisterBrokerRequestHeader(
            broker_name=broker_name, broker_addr=broker_addr, cluster_name=cluster_name, broker_id=broker_id
        )
        for addr in list(self.namesrv_addrs):
            request = RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header.to_ext_fields())
            try:
                response = self._client.invoke_sync(addr, request, _UNREGISTER_TIMEOUT_MS)
            except RocketqError as exc:
                log.warning("unregister broker from %s failed: %s", addr, exc)
                continue
            if response.code != ResponseCode.SUCCESS:
                log.warning("unregister broker from %s refused: %d %s", addr, response.code, response.remark)
            else:
                log.info("unregister broker from %s OK", addr)
