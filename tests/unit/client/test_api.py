"""Unit tests of the client plumbing shared by the producer and the consumers."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.config import ClientConfig
from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.client.instance import MQClientInstance
from rocketq.errors import BrokerError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import GetMaxOffsetRequestHeader
from rocketq.remoting.helper import host_addr_to_string, parse_addr


@given(st.ip_addresses(), st.integers(min_value=1, max_value=65535))
def test_host_addr_round_trips_through_parse_addr(ip: object, port: int) -> None:
    host = str(ip)
    addr = host_addr_to_string((host, port))
    assert parse_addr(addr) == (host, port)
    assert addr.startswith("[") == (":" in host)


def test_host_addr_formats() -> None:
    assert host_addr_to_string(("10.0.0.1", 10911)) == "10.0.0.1:10911"
    assert host_addr_to_string(("::1", 10911)) == "[::1]:10911"


class _FakeRemoting:
    """Answers every request with ``code``; records what was sent."""

    def __init__(self, code: int) -> None:
        self.code = code
        self.sent: list[tuple[str, RemotingCommand, int]] = []

    def invoke_sync(self, addr: str, request: RemotingCommand, timeout_ms: int) -> RemotingCommand:
        self.sent.append((addr, request, timeout_ms))
        return request.make_response(self.code, "remark-x")


def test_invoke_checked_sends_the_header_and_returns_success() -> None:
    remoting = _FakeRemoting(ResponseCode.SUCCESS)
    api = MQClientAPI(remoting, [])  # type: ignore[arg-type]
    header = GetMaxOffsetRequestHeader(topic="T", queue_id=3, bname="b")
    response = api.invoke_checked("10.0.0.1:10911", RequestCode.GET_MAX_OFFSET, header, 1234, b"xy")
    assert response.code == ResponseCode.SUCCESS
    addr, request, timeout = remoting.sent[0]
    assert (addr, timeout) == ("10.0.0.1:10911", 1234)
    assert request.code == RequestCode.GET_MAX_OFFSET
    assert request.ext_fields == header.to_ext_fields()
    assert request.body == b"xy"


def test_invoke_checked_raises_broker_error_on_failure_codes() -> None:
    api = MQClientAPI(_FakeRemoting(ResponseCode.SYSTEM_ERROR), [])  # type: ignore[arg-type]
    with pytest.raises(BrokerError) as err:
        api.invoke_checked("10.0.0.1:10911", RequestCode.HEART_BEAT, None, 1000)
    assert err.value.code == ResponseCode.SYSTEM_ERROR
    assert err.value.remark == "remark-x"
    assert err.value.addr == "10.0.0.1:10911"


def test_run_on_callback_pool_uses_the_pool_then_runs_inline_after_shutdown() -> None:
    inst = MQClientInstance(ClientConfig(namesrv_addr="127.0.0.1:9876"), "192.0.2.9@api-unit")
    ran = threading.Event()
    names: list[str] = []

    def record() -> None:
        names.append(threading.current_thread().name)
        ran.set()

    inst.run_on_callback_pool(record)
    assert ran.wait(5)
    assert names[0].startswith("192.0.2.9@api-unit-callback")
    inst.shutdown()
    inst.run_on_callback_pool(record)  # the pool is gone: the completion still runs, here
    assert names[1] == threading.current_thread().name
