"""PullAPIWrapper: the one place a PULL_MESSAGE is built, sent to the right broker and its answer processed.

Mirrors ``org.apache.rocketmq.client.impl.consumer.PullAPIWrapper`` and ``PullSysFlag``
(reference 6.2a, 7.2). The push, pull and lite-pull consumers, the admin API's reads and the
Spark connector all pull through it; none builds a ``PullMessageRequestHeader`` of its own.

Invariants:

* A pull goes to the broker id the previous answer for that queue suggested
  (``suggestWhichBrokerId``, the master by default), found through a
  :class:`~rocketq.client.impl.topic_route.RouteTable` (the route is fetched again once
  when the broker is unknown); COMMIT_OFFSET is never set on a pull that lands on a slave.
* A non-TAG expression needs a broker of 4.1.0 or later (``Version.V4_1_0_SNAPSHOT``).
* The push consumer's pull (:meth:`PullAPIWrapper.send_pull`) leaves as a frame written
  straight from its fields (:func:`pull_frame_of`) when the client writes JSON headers and
  does not sign its requests: byte for byte the header path's request, which a signing (ACL)
  or binary-header client still takes. Its answer is read without a header object
  (:func:`pull_result_of`), anything unusual by the header codec.
* ``process_pull_result`` decodes FOUND records (bodies decompressed), re-filters them by tag
  on the client (the broker compares only hash codes), stamps MIN_OFFSET/MAX_OFFSET and the
  broker name, and drops the raw bytes. It touches no connection.
* Thread-free: calls block the caller (sync) or complete a future on the remoting I/O thread
  (async); nothing here starts a thread.
"""

from __future__ import annotations

import concurrent.futures
import threading
from json.encoder import encode_basestring as _json_quote
from typing import Protocol

from rocketq.client.api_results import FindBrokerResult, PullResult, PullStatus, pull_status_of
from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.errors import ClientError
from rocketq.protocol.codes import PullSysFlag, RequestCode, SerializeType, Version
from rocketq.protocol.frame import RemotingCommand, encode_json_request
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.heartbeat import ExpressionType, SubscriptionData
from rocketq.protocol.java import plain_int
from rocketq.protocol.message import MessageConst, MessageExt, decode_records
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import MASTER_ID
from rocketq.remoting.connection import AsyncCallback

__all__ = [
    "PullAPIHost",
    "PullAPIWrapper",
    "build_pull_header",
    "build_pull_sys_flag",
    "decode_pull_result",
    "filter_by_tags",
    "pull_frame_of",
    "pull_result_of",
]


class PullAPIHost(Protocol):
    """What :class:`PullAPIWrapper` needs: the typed RPCs and a route table
    (an :class:`~rocketq.client.instance.MQClientInstance` or an
    :class:`~rocketq.client.impl.mq_admin_impl.MQAdminImpl`)."""

    @property
    def api(self) -> MQClientAPI: ...

    def find_broker_address_in_subscribe(
        self, broker_name: str, broker_id: int, only_this_broker: bool
    ) -> FindBrokerResult | None: ...

    def update_topic_route_info_from_name_server(self, topic: str) -> bool: ...


# PullSysFlag bits as plain ints: IntFlag arithmetic costs a microsecond a pull
_COMMIT_OFFSET = int(PullSysFlag.COMMIT_OFFSET)
_SUSPEND = int(PullSysFlag.SUSPEND)
_SUBSCRIPTION = int(PullSysFlag.SUBSCRIPTION)
_CLASS_FILTER = int(PullSysFlag.CLASS_FILTER)
_LITE_PULL = int(PullSysFlag.LITE_PULL_MESSAGE)


def build_pull_sys_flag(
    *,
    commit_offset: bool,
    suspend: bool,
    subscription: bool,
    class_filter: bool = False,
    lite_pull: bool = False,
) -> int:
    """``PullSysFlag.buildSysFlag``."""
    flag = 0
    if commit_offset:
        flag |= _COMMIT_OFFSET
    if suspend:
        flag |= _SUSPEND
    if subscription:
        flag |= _SUBSCRIPTION
    if class_filter:
        flag |= _CLASS_FILTER
    if lite_pull:
        flag |= _LITE_PULL
    return flag


_TAG = ExpressionType.TAG.value
#: ``DefaultMQPullConsumerImpl.pullSyncImpl`` for readers that own their offsets (the admin
#: tools, Spark): SUBSCRIPTION only, never COMMIT_OFFSET, never suspended.
_READ_ONLY_FLAG = build_pull_sys_flag(commit_offset=False, suspend=False, subscription=True)


def build_pull_header(
    consumer_group: str,
    mq: MessageQueue,
    offset: int,
    max_nums: int,
    *,
    sys_flag: int = _READ_ONLY_FLAG,
    commit_offset: int = 0,
    suspend_timeout_millis: int = 0,
    subscription: str | None = "*",
    sub_version: int = 0,
    expression_type: str | None = _TAG,
) -> PullMessageRequestHeader:
    """The PULL_MESSAGE header (``pullKernelImpl``); ``bname`` is set as the 4.9.5+ Java
    pull path sets it. The defaults are those of a read that commits nothing."""
    return PullMessageRequestHeader(
        consumer_group=consumer_group,
        topic=mq.topic,
        queue_id=mq.queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=sys_flag,
        commit_offset=commit_offset,
        suspend_timeout_millis=suspend_timeout_millis,
        subscription=subscription,
        sub_version=sub_version,
        expression_type=expression_type,
        bname=mq.broker_name,
    )


_PULL_MESSAGE = int(RequestCode.PULL_MESSAGE)
_JSON = int(SerializeType.JSON)


def pull_frame_of(
    consumer_group: str,
    mq: MessageQueue,
    offset: int,
    max_nums: int,
    *,
    sys_flag: int,
    commit_offset: int,
    suspend_timeout_millis: int,
    subscription: str | None,
    sub_version: int,
    expression_type: str | None,
    language: int,
    opaque: int,
) -> bytes:
    """The whole JSON frame of the PULL_MESSAGE request whose header is
    ``build_pull_header(consumer_group, mq, offset, max_nums, ...)`` (the same keyword
    arguments), sent with ``opaque`` by a client of ``language``: the ``extFields`` map
    written straight from the fields in the order the header codec writes it (Java
    ``HashMap`` order: the same for every subset of these 12 keys, which all fit its first
    table), one f-string, no header object, no dict, no command object (tested equal byte
    for byte, with and without the optional ``subscription`` and ``expressionType``)."""
    et = "" if expression_type is None else f'"expressionType":{_json_quote(expression_type)},'
    sub = "" if subscription is None else f'"subscription":{_json_quote(subscription)},'
    ext = (
        f'{{"queueId":"{mq.queue_id}","maxMsgNums":"{max_nums}","sysFlag":"{sys_flag}",'
        f'"suspendTimeoutMillis":"{suspend_timeout_millis}","commitOffset":"{commit_offset}",'
        f'"bname":{_json_quote(mq.broker_name)},"topic":{_json_quote(mq.topic)},'
        f'"queueOffset":"{offset}",{et}{sub}"subVersion":"{sub_version}",'
        f'"consumerGroup":{_json_quote(consumer_group)}}}'
    )
    return encode_json_request(_PULL_MESSAGE, ext, language, opaque, b"")


def pull_result_of(response: RemotingCommand, addr: str) -> PullResult:
    """``MQClientAPI.process_pull_response(response, addr)`` for the usual answer (a pull
    status and its four header fields plain decimal numbers), read straight from the map
    without a header object; anything else goes to that method, which decodes with the
    header codec and raises its errors (tested equal)."""
    status = pull_status_of(response.code)
    ext = response.ext_fields
    if status is not None and ext is not None:
        next_begin = plain_int(ext.get("nextBeginOffset"), 18)
        min_offset = plain_int(ext.get("minOffset"), 18)
        max_offset = plain_int(ext.get("maxOffset"), 18)
        suggest = plain_int(ext.get("suggestWhichBrokerId"), 18)
        if (
            next_begin is not None
            and min_offset is not None
            and max_offset is not None
            and suggest is not None
        ):
            return PullResult(
                pull_status=status,
                next_begin_offset=next_begin,
                min_offset=min_offset,
                max_offset=max_offset,
                suggest_which_broker_id=suggest,
                message_binary=response.body,
                remark=response.remark,
            )
    return MQClientAPI.process_pull_response(response, addr)


def filter_by_tags(msgs: list[MessageExt], subscription: SubscriptionData) -> list[MessageExt]:
    """The client-side tag re-check of ``PullAPIWrapper.processPullResult``.

    The broker matches tag *hash codes*, so colliding tags slip through; with a non-empty
    ``tags_set`` (and no class filter) only messages whose TAGS is in the set are kept;
    messages without a tag are dropped.
    """
    tags = subscription.tags_set
    if not tags or subscription.class_filter_mode:
        return msgs
    wanted = set(tags)
    return [m for m in msgs if m.tags in wanted]


def decode_pull_result(mq: MessageQueue, result: PullResult, subscription: SubscriptionData) -> PullResult:
    """The pure half of ``processPullResult`` (the asyncio consumers call it too): FOUND
    records decoded, re-filtered by tag, stamped with MIN_OFFSET/MAX_OFFSET and the broker
    name; the raw bytes dropped."""
    if result.pull_status is PullStatus.FOUND:
        offsets = {
            MessageConst.MIN_OFFSET: str(result.min_offset),
            MessageConst.MAX_OFFSET: str(result.max_offset),
        }
        # one pass: decoded, stamped (no property parsing on the pull path), then filtered
        msgs = decode_records(result.message_binary, broker_name=mq.broker_name, extra_properties=offsets)
        result.msg_found_list = filter_by_tags(msgs, subscription)
    result.message_binary = b""
    return result


class PullAPIWrapper:
    """``PullAPIWrapper``: broker choice per queue, the PULL_MESSAGE call, result processing."""

    def __init__(self, host: PullAPIHost, consumer_group: str) -> None:
        self._instance = host
        self.consumer_group = consumer_group
        self._lock = threading.Lock()
        self._pull_from_which_node: dict[MessageQueue, int] = {}

    @property
    def api(self) -> MQClientAPI:
        """The client instance's API (what :meth:`build_request`'s request is sent with)."""
        return self._instance.api

    def update_pull_from_which_node(self, mq: MessageQueue, broker_id: int) -> None:
        table = self._pull_from_which_node
        if table.get(mq) != broker_id:  # every pull answer: write only a change
            with self._lock:
                table[mq] = broker_id

    def recalculate_pull_from_which_node(self, mq: MessageQueue) -> int:
        # one dict read is atomic: no lock on the per-pull path
        return self._pull_from_which_node.get(mq, MASTER_ID)

    def _find_broker(self, mq: MessageQueue) -> FindBrokerResult:
        bid = self.recalculate_pull_from_which_node(mq)
        found = self._instance.find_broker_address_in_subscribe(mq.broker_name, bid, False)
        if found is None:
            self._instance.update_topic_route_info_from_name_server(mq.topic)
            found = self._instance.find_broker_address_in_subscribe(mq.broker_name, bid, False)
        if found is None:
            raise ClientError(f"The broker[{mq.broker_name}] not exist")
        return found

    def pull_target(self, mq: MessageQueue, expression_type: str | None, sys_flag: int) -> tuple[str, int]:
        """``pullKernelImpl``'s choice of broker: its address and the sys flag a pull to it
        carries (COMMIT_OFFSET cleared for a slave); ClientError for an unknown broker, or a
        non-TAG expression to a broker older than 4.1.0."""
        found = self._find_broker(mq)
        if not ExpressionType.is_tag_type(expression_type) and found.broker_version < Version.V4_1_0_SNAPSHOT:
            raise ClientError(
                f"The broker[{mq.broker_name}, {found.broker_version}] does not upgrade to support for filter "
                "message by SQL92"
            )
        flag = sys_flag
        if found.slave:
            flag &= ~_COMMIT_OFFSET  # only masters store the piggy-backed offset
        return found.broker_addr, flag

    def send_pull(
        self,
        addr: str,
        mq: MessageQueue,
        sub_expression: str | None,
        expression_type: str | None,
        sub_version: int,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        broker_suspend_max_time_ms: int,
        timeout_ms: int,
        callback: AsyncCallback,
    ) -> None:
        """The PULL_MESSAGE of :meth:`build_request` to ``addr`` with ``sys_flag`` (both from
        :meth:`pull_target`), sent as ``MQClientAPI.pull_message_async_callback`` sends it
        (``callback`` gets the raw answer on the I/O thread); a JSON client that does not
        sign its requests writes the frame straight from the fields (:func:`pull_frame_of`)."""
        api = self._instance.api
        remoting = api.remoting
        if api.serialize_type == _JSON and not remoting.signs_requests:
            opaque = remoting.next_opaque()
            frame = pull_frame_of(
                self.consumer_group,
                mq,
                offset,
                max_nums,
                sys_flag=sys_flag,
                commit_offset=commit_offset,
                suspend_timeout_millis=broker_suspend_max_time_ms,
                subscription=sub_expression,
                sub_version=sub_version,
                expression_type=expression_type,
                language=api.language,
                opaque=opaque,
            )
            remoting.invoke_async_callback_frame(addr, frame, opaque, timeout_ms, callback)
            return
        header = self._pull_header(
            mq, sub_expression, expression_type, sub_version, offset, max_nums, sys_flag, commit_offset,
            broker_suspend_max_time_ms,
        )  # fmt: skip
        api.pull_message_async_callback(addr, header, timeout_ms, callback)

    def _pull_header(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        expression_type: str | None,
        sub_version: int,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        broker_suspend_max_time_ms: int,
    ) -> PullMessageRequestHeader:
        return build_pull_header(
            self.consumer_group,
            mq,
            offset,
            max_nums,
            sys_flag=sys_flag,
            commit_offset=commit_offset,
            suspend_timeout_millis=broker_suspend_max_time_ms,
            subscription=sub_expression,
            sub_version=sub_version,
            expression_type=expression_type,
        )

    def build_request(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        expression_type: str | None,
        sub_version: int,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        broker_suspend_max_time_ms: int,
    ) -> tuple[str, PullMessageRequestHeader]:
        """``pullKernelImpl`` up to the send: the broker to ask and the request header, for the
        pulls that go through ``MQClientAPI`` (:meth:`pull_kernel_impl` and its async twin;
        the push consumer sends its pulls with :meth:`send_pull`)."""
        addr, flag = self.pull_target(mq, expression_type, sys_flag)
        header = self._pull_header(
            mq, sub_expression, expression_type, sub_version, offset, max_nums, flag, commit_offset,
            broker_suspend_max_time_ms,
        )  # fmt: skip
        return addr, header

    def pull_kernel_impl(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        expression_type: str | None,
        sub_version: int,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        broker_suspend_max_time_ms: int,
        timeout_ms: int,
    ) -> PullResult:
        """One blocking PULL_MESSAGE (``CommunicationMode.SYNC``; records undecoded).

        A synchronous invoke: it raises ClientError on the remoting I/O thread rather than
        wait there for an answer that thread would have to read."""
        addr, header = self.build_request(
            mq,
            sub_expression,
            expression_type,
            sub_version,
            offset,
            max_nums,
            sys_flag,
            commit_offset,
            broker_suspend_max_time_ms,
        )
        return self._instance.api.pull_message_sync(addr, header, timeout_ms)

    def pull_kernel_impl_async(
        self,
        mq: MessageQueue,
        sub_expression: str | None,
        expression_type: str | None,
        sub_version: int,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        broker_suspend_max_time_ms: int,
        timeout_ms: int,
    ) -> concurrent.futures.Future[PullResult]:
        """One PULL_MESSAGE whose future completes on the I/O thread (records undecoded)."""
        addr, header = self.build_request(
            mq,
            sub_expression,
            expression_type,
            sub_version,
            offset,
            max_nums,
            sys_flag,
            commit_offset,
            broker_suspend_max_time_ms,
        )
        return self._instance.api.pull_message_async(addr, header, timeout_ms)

    def pull_read_only(
        self,
        mq: MessageQueue,
        offset: int,
        max_nums: int,
        timeout_ms: int,
        *,
        sub_expression: str = "*",
        expression_type: str = _TAG,
    ) -> PullResult:
        """A PULL_MESSAGE that commits nothing and is never held (SUBSCRIPTION only): the
        reads of the admin tools and the Spark connector. Records undecoded.

        ``expression_type`` SQL92 sends ``sub_expression`` as an SQL92 selector. Such
        readers never heartbeat, so they never learn a broker's version and
        ``pullKernelImpl``'s version check is not made: a broker that cannot filter
        answers SYSTEM_ERROR itself."""
        addr, header = self._read_only_request(mq, offset, max_nums, sub_expression, expression_type)
        return self._instance.api.pull_message_sync(addr, header, timeout_ms)

    def pull_read_only_async(
        self,
        mq: MessageQueue,
        offset: int,
        max_nums: int,
        timeout_ms: int,
        *,
        sub_expression: str = "*",
        expression_type: str = _TAG,
    ) -> concurrent.futures.Future[PullResult]:
        """:meth:`pull_read_only` without waiting (the future completes on the I/O thread)."""
        addr, header = self._read_only_request(mq, offset, max_nums, sub_expression, expression_type)
        return self._instance.api.pull_message_async(addr, header, timeout_ms)

    def _read_only_request(
        self, mq: MessageQueue, offset: int, max_nums: int, sub_expression: str, expression_type: str
    ) -> tuple[str, PullMessageRequestHeader]:
        found = self._find_broker(mq)  # the read-only flag has no COMMIT_OFFSET to clear
        header = build_pull_header(
            self.consumer_group,
            mq,
            offset,
            max_nums,
            subscription=sub_expression,
            expression_type=expression_type,
        )
        return found.broker_addr, header

    def process_pull_result(
        self, mq: MessageQueue, result: PullResult, subscription: SubscriptionData
    ) -> PullResult:
        """``processPullResult``: remember the suggested broker, decode, re-filter, annotate."""
        self.update_pull_from_which_node(mq, result.suggest_which_broker_id)
        return decode_pull_result(mq, result, subscription)

    def process_pull_answer(
        self, mq: MessageQueue, addr: str, response: RemotingCommand, subscription: SubscriptionData
    ) -> PullResult:
        """``processPullResponse`` + ``processPullResult`` of the raw answer to a pull sent
        with :meth:`send_pull` (BrokerError for a code that is no pull status)."""
        return self.process_pull_result(mq, pull_result_of(response, addr), subscription)
