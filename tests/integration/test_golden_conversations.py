"""rocketq's push consumers say what a Java 4.9.7 push consumer says (issues #5 and #6).

A push consumer (concurrent, with a tag expression and one failing message; then an orderly
one) runs against the embedded cluster while every request its RemotingClient writes is
recorded. Each request code of golden/push_concurrently.jsonl and golden/push_orderly.jsonl
must appear, with the same extFields keys and the same JSON body shape.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

import pytest

from rocketq.client import (
    ClientConfig,
    ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    Message,
    Producer,
    PushConsumer,
    PushConsumerConfig,
)
from rocketq.protocol import fastjson
from rocketq.protocol.frame import RemotingCommand, decode_frame
from rocketq.protocol.message import MessageExt
from rocketq.remoting.client import RemotingClient
from rocketq.testing.cluster import EmbeddedCluster
from tests.conftest import load_golden_frames

# pure_python: the recorder monkeypatches RemotingClient's calls, which compiled callers (the push
# consumer's pull frames) reach natively; the pure pass runs it (the frame's bytes equal the header
# path's in both builds: tests/unit/client/test_pull_frame.py)
pytestmark = [pytest.mark.integration, pytest.mark.pure_python]

#: Java-only extras: the CLIENT_INNER_PRODUCER unregistration (rocketq starts no inner
#: producer unless a send-back falls back to it).
_JAVA_ONLY = {(35, ("clientID", "producerGroup"))}

Recorded = list[tuple[int, dict[str, str], bytes]]


def _shape(value: object) -> object:
    """The structure of a JSON value: keys and element shapes, no values."""
    if isinstance(value, dict):
        return {str(k) if not isinstance(k, str) else k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(value[0])] if value else []
    return type(value).__name__


def _golden_requests(name: str, client_prefix: str) -> dict[tuple[int, tuple[str, ...]], bytes]:
    out: dict[tuple[int, tuple[str, ...]], bytes] = {}
    for f in load_golden_frames(name):
        if f.is_response or f.dir != "client->server" or not f.client.startswith(client_prefix):
            continue
        cmd = decode_frame(f.frame)
        out.setdefault((cmd.code, tuple(sorted(cmd.ext_fields or {}))), cmd.body)
    return out


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> dict[int, Recorded]:
    """Every request any RemotingClient of this process writes, by client object id."""
    seen: dict[int, Recorded] = {}
    lock = threading.Lock()

    def wrap(name: str) -> None:
        original = getattr(RemotingClient, name)

        def recording(self: RemotingClient, addr: str, request: RemotingCommand, *args: object) -> object:
            with lock:
                seen.setdefault(id(self), []).append(
                    (request.code, dict(request.ext_fields or {}), request.body)
                )
            return original(self, addr, request, *args)

        monkeypatch.setattr(RemotingClient, name, recording)

    def wrap_frame(name: str) -> None:
        """A request the caller encoded itself (``*_frame``: the push consumer's pulls, the
        producer's sync sends), recorded as the command its frame decodes to."""
        original = getattr(RemotingClient, name)

        def recording(self: RemotingClient, addr: str, frame: bytes, *args: object) -> object:
            request = decode_frame(frame)
            with lock:
                seen.setdefault(id(self), []).append(
                    (request.code, dict(request.ext_fields or {}), request.body)
                )
            return original(self, addr, frame, *args)

        monkeypatch.setattr(RemotingClient, name, recording)

    for name in ("invoke_sync", "invoke_async", "invoke_async_callback", "invoke_oneway"):
        wrap(name)
    for name in ("invoke_sync_frame", "invoke_async_callback_frame"):
        wrap_frame(name)
    return seen


def _compare(recorded: Recorded, golden: dict[tuple[int, tuple[str, ...]], bytes]) -> None:
    mine: dict[tuple[int, tuple[str, ...]], bytes] = {}
    for code, ext, body in recorded:
        mine.setdefault((code, tuple(sorted(ext))), body)
    missing = set(golden) - set(mine) - _JAVA_ONLY
    assert not missing, f"requests Java sends that rocketq did not: {sorted(missing)}"
    for key, golden_body in golden.items():
        if key in _JAVA_ONLY or not golden_body:
            continue
        ours = fastjson.loads(mine[key])
        theirs = json.loads(golden_body)
        assert _shape(ours).keys() == _shape(theirs).keys(), f"body shape of code {key[0]}"  # type: ignore[attr-defined]


def test_push_concurrently_conversation_matches_golden(
    embedded_cluster: EmbeddedCluster, recorder: dict[int, Recorded], unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 4)
    with Producer(unique_name("pg"), namesrv_addr=embedded_cluster.namesrv_addr) as producer:
        for i in range(8):
            producer.send(Message(topic, f"m{i}".encode(), tags="TagA" if i % 2 else "TagB"))
    failed_once: set[bytes] = set()
    done = threading.Event()
    count = [0]

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        ctx.delay_level_when_next_consume = 1  # keep the retry quick (the header keys are the same)
        for m in msgs:
            if m.body == b"m1" and m.body not in failed_once:
                failed_once.add(m.body)
                return ConsumeConcurrentlyStatus.RECONSUME_LATER
            count[0] += 1
        if count[0] >= 8:
            done.set()
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        config=PushConsumerConfig(
            consumer_group=group, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
        ),
        namesrv_addr=embedded_cluster.namesrv_addr,
        client_config=ClientConfig(persist_consumer_offset_interval_ms=500),
    )
    consumer.subscribe(topic, "TagA || TagB")
    consumer.register_message_listener(listener)
    consumer.start()
    try:
        assert consumer._instance is not None
        remoting = consumer._instance.remoting
        assert done.wait(60), "the retried message never came back"
        time.sleep(1.0)  # one periodic offset persist
    finally:
        consumer.shutdown()
    _compare(recorder[id(remoting)], _golden_requests("push_concurrently.jsonl", "push-c1"))


def test_push_orderly_conversation_matches_golden(
    embedded_cluster: EmbeddedCluster, recorder: dict[int, Recorded], unique_name: Callable[..., str]
) -> None:
    topic, group = unique_name("T"), unique_name("G")
    embedded_cluster.create_topic(topic, 4)
    with Producer(unique_name("pg"), namesrv_addr=embedded_cluster.namesrv_addr) as producer:
        for i in range(8):
            producer.send(Message(topic, f"o{i}".encode()))
    seen: list[bytes] = []
    consumer = PushConsumer(
        config=PushConsumerConfig(
            consumer_group=group,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            lock_interval_ms=300,
            lock_max_live_time_ms=3000,
        ),
        namesrv_addr=embedded_cluster.namesrv_addr,
        client_config=ClientConfig(persist_consumer_offset_interval_ms=500),
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener_orderly(
        lambda msgs, ctx: (seen.extend(m.body for m in msgs), ConsumeOrderlyStatus.SUCCESS)[1]
    )
    consumer.start()
    try:
        assert consumer._instance is not None
        remoting = consumer._instance.remoting
        deadline = time.monotonic() + 30
        while len(seen) < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(seen) == 8
        time.sleep(1.0)  # periodic lock renewal and offset persist
    finally:
        consumer.shutdown()
    _compare(recorder[id(remoting)], _golden_requests("push_orderly.jsonl", "order-c1"))
