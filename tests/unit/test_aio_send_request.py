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
from tests.unit.test_layering import SOURCES

_text = st.text(max_size=12)
_opt_int = st.none() | st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1)
_headers = st.builds(
    SendMessageRequestHeader,
    producer_group=st.none() | _text,
    topic=st.none() | _text,
    default_topic=st.none() | _text,
    default_topic_queue_nums=_opt_int,
    queue_id=_opt_int,
    sys_flag=_opt_int,
    born_timestamp=st.none() | st.integers(min_value=0, max_value=(1 << 63) - 1),
    flag=_opt_int,
    properties=st.none() | _text,
    reconsume_times=_opt_int,
    unit_mode=st.booleans(),
    max_reconsume_times=_opt_int,
    batch=st.booleans(),
    bname=st.none() | _text,
)
_REPLY = encode_properties({MessageConst.MSG_TYPE: REPLY_MESSAGE_FLAG, "K": "v"})


@settings(max_examples=200)
@given(
    _headers,
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
        in {"SendMessageRequestHeaderV2", "ext_fields_from_v1"}
    ]
    assert bad == []
