"""The remoting hooks on real sockets (loopback): the client's rpc_hook signs sync, async and
oneway requests alike, and the server's request validator refuses before any processor runs
(answering only non-oneway requests), with the connection kept open."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from rocketq.acl import AclClientRPCHook, SessionCredentials, parse_plain_acl
from rocketq.acl.plain_access_validator import PlainAccessValidator
from rocketq.acl.signing import SIGNATURE, cal_signature, combine_request_content
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.server import Channel, RemotingServer, ServerThread
from rocketq.testing.waits import wait_until

CREDS = SessionCredentials("hookUser1", "hookSecret1")


class _Recorder:
    def __init__(self) -> None:
        self.seen: list[RemotingCommand] = []
        self.lock = threading.Lock()

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        with self.lock:
            self.seen.append(request)
        return request.make_response(ResponseCode.SUCCESS)


@pytest.fixture
def served() -> Iterator[tuple[RemotingServer, _Recorder]]:
    server = RemotingServer(name="hooks")
    recorder = _Recorder()
    server.register_default_processor(recorder)
    with ServerThread(server):
        yield server, recorder


def test_client_hook_signs_sync_async_and_oneway(served: tuple[RemotingServer, _Recorder]) -> None:
    server, recorder = served
    addr = f"127.0.0.1:{server.port}"
    with RemotingClient(name="signer", rpc_hook=AclClientRPCHook(CREDS)) as client:
        client.invoke_sync(addr, RemotingCommand.request(30, {"topic": "t1"}), 3000)
        client.invoke_async(addr, RemotingCommand.request(30, {"topic": "t2"}, b"body"), 3000).result(3)
        client.invoke_oneway(addr, RemotingCommand.request(30, {"topic": "t3"}))
        wait_until(lambda: len(recorder.seen) == 3, 5, "three requests")
    for request in recorder.seen:
        ext = request.ext_fields
        assert ext is not None and ext["AccessKey"] == CREDS.access_key
        assert ext[SIGNATURE] == cal_signature(combine_request_content(ext, request.body), CREDS.secret_key)


def test_server_validator_refuses_before_the_processor(served: tuple[RemotingServer, _Recorder]) -> None:
    server, recorder = served
    validator = PlainAccessValidator(
        parse_plain_acl({"accounts": [{"accessKey": "hookUser1", "secretKey": "hookSecret1"}]})
    )
    server.set_request_validator(validator.check)
    addr = f"127.0.0.1:{server.port}"
    with RemotingClient(name="anonymous") as client:
        refused = client.invoke_sync(addr, RemotingCommand.request(30, {"topic": "t"}), 3000)
        assert refused.code == ResponseCode.SYSTEM_ERROR
        assert (refused.remark or "").startswith("org.apache.rocketmq.acl.common.AclException: No accessKey")
        client.invoke_oneway(addr, RemotingCommand.request(30, {"topic": "t"}))  # refused silently
        assert client.is_connected(addr)
    with RemotingClient(name="signed", rpc_hook=AclClientRPCHook(CREDS)) as client:
        assert (
            client.invoke_sync(addr, RemotingCommand.request(30, {"topic": "t"}), 3000).code
            == ResponseCode.SUCCESS
        )
    assert len(recorder.seen) == 1
