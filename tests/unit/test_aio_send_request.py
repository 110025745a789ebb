"""The asyncio client sends what the blocking client sends: ``AsyncMQClientAPI.send_request``
is the blocking client's own builder (``send_request_command``), so its frames are the exact
bytes of ``MQClientAPI.build_send_request`` for every header, batch flag, serialize type and
reply marker; and no module of ``rocketq.aio`` builds a V2 send header of its own."""

from __future__ import annotations

import ast
import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.aio.api import AsyncMQClientAPI
from rocketq.aio.remoting import AsyncRemotingClient
from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.protocol.codes import RequestCode, SerializeType
from rocketq.protocol.headers import SendMessageRequestHeader
from rocketq.protocol.message import MessageConst, encode_properties
from rocketq.protocol.mixall import REPLY_MESSAGE_FLAG
from rocketq.remoting.client import RemotingClient
from tests.unit.client.test_send_fast_paths import _headers
from tests.unit.test_layering import SOURCES

_REPLY = encode_properties({MessageConst.MSG_TYPE: REPLY_MESSAGE_FLAG, "K": "v"})


@settings(max_examples=200)
@given(
    _headers(),
    st.booleans(),
    st.sampled_from([SerializeType.JSON, SerializeType.ROCKETMQ]),
    st.booleans(),
)
def test_async_send_request_is_the_blocking_clients_frame(
    header: SendMessageRequestHeader, batch: bool, stype: int, reply: bool
) -> None:
    if reply:
        header.properties = _REPLY
    sync_api = MQClientAPI(RemotingClient(name="unused"), serialize_type=stype)  # never started
    async_api = AsyncMQClientAPI(AsyncRemotingClient(name="unused"), [], serialize_type=stype)
    want = sync_api.build_send_request(copy.copy(header), b"body", batch=batch)
    got = async_api.send_request(copy.copy(header), b"body", batch=batch)
    want.opaque = got.opaque = 11
    assert got.encode() == want.encode()
    if reply and not batch:
        assert got.code == RequestCode.SEND_REPLY_MESSAGE_V2
    else:
        assert got.code == (RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2)


def test_no_aio_module_builds_a_v2_send_header() -> None:
    """The V2 header comes only from the shared builder (one place to make it faster)."""
    bad = [
        f"{rel}:{node.lineno}"
        for rel, tree in SOURCES
        if rel.startswith("rocketq/aio/")
        for node in ast.walk(tree)
        if isinstance(node, ast.Name | ast.Attribute)
        and (node.id if isinstance(node, ast.Name) else node.attr)
        in {"SendMessageRequestHeaderV2", "send_v2_ext_fields"}
    ]
    assert bad == []
