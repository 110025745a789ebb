"""PULL_MESSAGE: validation, store read, response mapping, long polling, offset commit.

Mirrors ``org.apache.rocketmq.broker.processor.PullMessageProcessor`` (4.9.x) and the
reference sections 6.1-6.3. Invariants:

* Validation runs in Java's order (6.1) with Java's codes and remarks. An SQL92
  subscription needs ``enablePropertyFilter`` (else SYSTEM_ERROR, as Java); one sent with
  the pull is compiled on the spot (SUBSCRIPTION_PARSE_FAILED if it does not), otherwise
  the group's registered filter data must exist (FILTER_DATA_NOT_EXIST) and be at least
  the request's ``subVersion`` (FILTER_DATA_NOT_LATEST).
* Filtering is ``ExpressionMessageFilter``'s: tags codes on the consume queue, the SQL92
  expression over each candidate record's properties; skipped records still advance
  ``nextBeginOffset``. Tag and unfiltered pulls never decode a record.
* The response body is the stored records, sliced from the store: the stored format is
  the wire format, nothing is decoded on this path.
* The server calls :meth:`PullMessageProcessor.process_now` (its immediate handler): a pull
  is served by plain calls, no coroutine or task per pull; a held pull answers None and
  the hold service writes its answer later.
* A PULL_NOT_FOUND with the SUSPEND flag on the first pass is held (no response now); the
  re-execution after a wake-up or the timeout never suspends again and never commits the
  offset, and its response is encoded in JSON whatever the request used (Java writes it
  outside the normal callback with the default serialize type; golden binary_header seq 29).
* The commit offset carried by the request is stored only on the first pass, only with
  the COMMIT_OFFSET flag, and only on a master.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from rocketq.broker.filter import ConsumerFilterData, ExpressionMessageFilter
from rocketq.broker.filter.consumer_filter_manager import build_filter_data
from rocketq.broker.long_polling import PullRequest, PullRequestHoldService
from rocketq.broker.processors import decode_request_header, error_response
from rocketq.broker.store import GetMessageStatus, MessageExtBrokerInner
from rocketq.errors import IllegalArgumentError, ProtocolError
from rocketq.protocol import fastjson
from rocketq.protocol.codes import PermName, PullSysFlag, ResponseCode, SerializeType
from rocketq.protocol.frame import RemotingCommand, _json_flat_map
from rocketq.protocol.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rocketq.protocol.heartbeat import (
    ExpressionType,
    MessageModel,
    SubscriptionData,
    build_subscription_data,
)
from rocketq.protocol.message import MessageConst, encode_properties, tags_code
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import MASTER_ID, RMQ_SYS_OFFSET_MOVED_EVENT
from rocketq.remoting.helper import exception_desc
from rocketq.remoting.server import Channel

if TYPE_CHECKING:
    from rocketq.broker.broker import BrokerController

__all__ = ["PullMessageProcessor"]

log = logging.getLogger(__name__)

# plain ints: IntFlag arithmetic builds enum members on every request (py-spy: 6 % of a drain)
_PERM_READ = int(PermName.PERM_READ)
_SUSPEND = int(PullSysFlag.SUSPEND)
_COMMIT_OFFSET = int(PullSysFlag.COMMIT_OFFSET)
_SUBSCRIPTION = int(PullSysFlag.SUBSCRIPTION)

_ROCKETMQ = int(SerializeType.ROCKETMQ)


def answer_fields(
    suggest: int, next_begin: int, min_offset: int, max_offset: int, serialize_type: int
) -> tuple[dict[str, str], str | None]:
    """The pull answer's extFields, as ``PullMessageResponseHeader.to_ext_fields`` writes them
    for ``serialize_type`` (HashMap order for JSON, the FastCodesHeader order for ROCKETMQ),
    and for JSON the same map written as JSON (``RemotingCommand.ext_json``; the values are
    decimal digits, which JSON quoting leaves alone). Checked against the codec at import."""
    s, n, lo, hi = str(suggest), str(next_begin), str(min_offset), str(max_offset)
    if serialize_type == _ROCKETMQ:
        return {"suggestWhichBrokerId": s, "nextBeginOffset": n, "minOffset": lo, "maxOffset": hi}, None
    return (
        {"suggestWhichBrokerId": s, "nextBeginOffset": n, "maxOffset": hi, "minOffset": lo},
        f'{{"suggestWhichBrokerId":"{s}","nextBeginOffset":"{n}","maxOffset":"{hi}","minOffset":"{lo}"}}',
    )


def _check_answer_fields() -> None:
    for serialize_type in (SerializeType.JSON, SerializeType.ROCKETMQ):
        values = (-1, 1 << 62, 0, 123)
        header = PullMessageResponseHeader(
            suggest_which_broker_id=values[0],
            next_begin_offset=values[1],
            min_offset=values[2],
            max_offset=values[3],
        )
        fields, ext_json = answer_fields(*values, int(serialize_type))
        codec = header.to_ext_fields(serialize_type=serialize_type)
        if list(fields.items()) != list(codec.items()) or (
            ext_json is not None and ext_json != _json_flat_map(codec)
        ):  # pragma: no cover - a codec change
            raise AssertionError(f"pull answer template {fields} {ext_json} != {codec}")


_check_answer_fields()

_STATUS_CODE = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


class PullMessageProcessor:
    """Serves PULL_MESSAGE (code 11)."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.hold_service = PullRequestHoldService(
            max_offset=broker.store.get_max_offset_in_queue,
            wakeup=self._execute_when_wakeup,
            long_polling_enable=broker.config.long_polling_enable,
            after_chunk=broker.server.call_after_chunk,
        )

    async def start(self) -> None:
        await self.hold_service.start()
        self.broker.store.add_arrival_listener(self.hold_service.on_message_arrived)

    async def stop(self) -> None:
        await self.hold_service.stop()

    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        return self.process_now(channel, request)

    def process_now(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        """The server's immediate handler (:data:`~rocketq.remoting.server.ImmediateHandler`):
        the answer, or None for a pull held for long polling (the hold service answers it
        later) or a zero-copy answer already written; never a coroutine, as nothing here
        waits. An exception reaches the server, which answers SYSTEM_ERROR."""
        started = time.perf_counter()
        try:
            return self.process_request(channel, request, broker_allow_suspend=True)
        finally:
            self.broker.stats.pull_latency.observe((time.perf_counter() - started) * 1000.0)

    def _execute_when_wakeup(self, pr: PullRequest) -> None:
        try:
            response = self.process_request(
                pr.channel, pr.request, broker_allow_suspend=False, header=pr.header
            )
        except Exception as exc:
            log.exception("woken pull failed")
            response = pr.request.make_response(ResponseCode.SYSTEM_ERROR, str(exc))
        if response is None or pr.request.is_oneway:
            return
        response.serialize_type = SerializeType.JSON
        pr.channel.write(response)

    # ------------------------------------------------------------------ the request
    def process_request(
        self,
        channel: Channel,
        request: RemotingCommand,
        *,
        broker_allow_suspend: bool,
        header: PullMessageRequestHeader | None = None,
    ) -> RemotingCommand | None:
        """``processRequest``; ``header`` is the request's header when an earlier pass of the
        same request decoded it already (a woken held pull)."""
        broker = self.broker
        cfg = broker.config
        if header is None:
            decoded = decode_request_header(request, PullMessageRequestHeader)
            if isinstance(decoded, RemotingCommand):
                return decoded
            header = decoded
        group = str(header.consumer_group)
        topic = str(header.topic)
        queue_id = int(header.queue_id or 0)
        queue_offset = int(header.queue_offset or 0)
        sys_flag = int(header.sys_flag or 0)

        if not cfg.broker_permission & _PERM_READ:
            return error_response(
                request,
                ResponseCode.NO_PERMISSION,
                f"the broker[{broker.config.broker_ip1}] pulling message is forbidden",
            )
        sgc = broker.subscription_group_manager.find_subscription_group_config(group)
        if sgc is None:
            return error_response(
                request,
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{group}] does not exist, "
                "https://rocketmq.apache.org/docs/bestPractice/06FAQ",
            )
        if not sgc.consume_enable:
            return error_response(
                request, ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}"
            )

        has_suspend = bool(sys_flag & _SUSPEND)
        has_commit = bool(sys_flag & _COMMIT_OFFSET)
        has_subscription = bool(sys_flag & _SUBSCRIPTION)
        suspend_timeout_ms = int(header.suspend_timeout_millis or 0) if has_suspend else 0

        tc = broker.topic_config_manager.select_topic_config(topic)
        if tc is None:
            return error_response(
                request,
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! "
                "https://rocketmq.apache.org/docs/bestPractice/06FAQ",
            )
        if not tc.perm & _PERM_READ:
            return error_response(
                request, ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden"
            )
        if queue_id < 0 or queue_id >= tc.read_queue_nums:
            return error_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                f"topicConfig.readQueueNums:[{tc.read_queue_nums}] consumer:[{channel.remote_addr}]",
            )

        sub: SubscriptionData | None
        filter_data: ConsumerFilterData | None = None
        if has_subscription:
            try:
                sub = build_subscription_data(
                    topic, header.subscription, expression_type=header.expression_type or "TAG"
                )
                if not ExpressionType.is_tag_type(sub.expression_type):
                    # ConsumerFilterManager.build: null when it does not compile
                    filter_data = build_filter_data(
                        topic,
                        group,
                        header.subscription,
                        header.expression_type,
                        int(header.sub_version or 0),
                        int(time.time() * 1000),
                    )
                    if filter_data is None:
                        raise IllegalArgumentError(f"cannot compile {header.subscription!r}")
            except Exception:
                return error_response(
                    request,
                    ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                    "parse the consumer's subscription failed",
                )
        else:
            cgi = broker.consumer_manager.get_consumer_group_info(group)
            if cgi is None:
                return error_response(
                    request, ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist"
                )
            if not sgc.consume_broadcast_enable and cgi.message_model == MessageModel.BROADCASTING:
                return error_response(
                    request,
                    ResponseCode.NO_PERMISSION,
                    f"the consumer group[{group}] can not consume by broadcast way",
                )
            sub = cgi.find_subscription_data(topic)
            if sub is None:
                return error_response(
                    request, ResponseCode.SUBSCRIPTION_NOT_EXIST, "the consumer's subscription not exist"
                )
            if sub.sub_version < int(header.sub_version or 0):
                return error_response(
                    request, ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest"
                )
            if not ExpressionType.is_tag_type(sub.expression_type):
                filter_data = broker.consumer_filter_manager.get(topic, group)
                if filter_data is None:
                    return error_response(
                        request,
                        ResponseCode.FILTER_DATA_NOT_EXIST,
                        "The broker's consumer filter data is not exist!Your expression may be wrong!",
                    )
                if filter_data.client_version < int(header.sub_version or 0):
                    return error_response(
                        request,
                        ResponseCode.FILTER_DATA_NOT_LATEST,
                        "the consumer's consumer filter data not latest",
                    )
        if (
            sub is not None
            and not ExpressionType.is_tag_type(sub.expression_type)
            and not cfg.enable_property_filter
        ):
            return error_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {sub.expression_type}",
            )

        message_filter = ExpressionMessageFilter(sub, filter_data)
        matches = (
            message_filter.unit_matcher
            if not message_filter.matches_all_units
            else message_filter.is_matched_by_consume_queue
        )
        result = broker.store.get_message(
            group,
            topic,
            queue_id,
            queue_offset,
            int(header.max_msg_nums or 32),
            None if message_filter.matches_all_units else matches,
            message_filter.is_matched_by_commit_log if message_filter.filters_records else None,
        )
        status = result.status
        if status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
            code = ResponseCode.PULL_OFFSET_MOVED if queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
        else:
            code = _STATUS_CODE[status]
        # 6.2a: with slaveReadEnable off a master always suggests itself
        suggest = MASTER_ID
        if cfg.slave_read_enable:
            suggest = (
                sgc.which_broker_when_consume_slowly if result.suggest_pulling_from_slave else sgc.broker_id
            )
        # The answer's header is in the request's serialize type, except that answers not
        # written through the processor callback are in the server's default, JSON
        # (reference 2.4): a woken held pull (_execute_when_wakeup) and a zero-copy answer
        # (ManyMessageTransfer). The extFields follow the order of the type they are sent in.
        zero_copy = code == ResponseCode.SUCCESS and not cfg.transfer_msg_by_heap
        answer_type = request.serialize_type if broker_allow_suspend and not zero_copy else SerializeType.JSON
        fields, ext_json = answer_fields(
            suggest, result.next_begin_offset, result.min_offset, result.max_offset, answer_type
        )
        response: RemotingCommand | None = request.make_response(code, status.name, fields)
        assert response is not None
        response.ext_json = ext_json
        if code == ResponseCode.SUCCESS:
            broker.stats.inc_group_get(group, topic, result.message_count, result.buffer_total_size)
            if not zero_copy:  # transferMsgByHeap, the default: the records copied into one body
                response.body = result.body()
            else:
                # the header, then the records straight from the mapped files, written here
                response.serialize_type = answer_type
                try:
                    if not request.is_oneway:  # Java writes it even then; nobody waits for it
                        channel.write_with_body(response, result.buffers)
                    response = None
                except ProtocolError as exc:  # over 16 MB of records: answered like the heap path
                    log.error("pull answer for %s@%s:%d not written: %s", group, topic, queue_id, exc)
                    response = error_response(request, ResponseCode.SYSTEM_ERROR, exception_desc(exc))
        elif code == ResponseCode.PULL_NOT_FOUND and broker_allow_suspend and has_suspend:
            timeout_ms = suspend_timeout_ms if cfg.long_polling_enable else cfg.short_polling_time_mills
            now = time.monotonic_ns() // 1_000_000
            broker.stats.inc_long_poll_hold()
            self.hold_service.suspend(
                topic,
                queue_id,
                PullRequest(
                    request,
                    channel,
                    timeout_ms,
                    now,
                    queue_offset,
                    matches,
                    message_filter.is_matched_by_properties if message_filter.filters_records else None,
                    header,
                ),
            )
            response = None
        elif code == ResponseCode.PULL_OFFSET_MOVED:
            mq = MessageQueue(topic, cfg.broker_name, queue_id)
            self._generate_offset_moved_event(group, mq, queue_offset, result.next_begin_offset)
            log.warning(
                "PULL_OFFSET_MOVED: group=%s %s requestOffset=%d newOffset=%d",
                group,
                mq,
                queue_offset,
                result.next_begin_offset,
            )

        if broker_allow_suspend and has_commit and cfg.broker_id == MASTER_ID:
            broker.consumer_offset_manager.commit_offset(
                channel.remote_addr, group, topic, queue_id, int(header.commit_offset or 0)
            )
        return response

    def _generate_offset_moved_event(
        self, group: str, mq: MessageQueue, offset_request: int, offset_new: int
    ) -> None:
        """``generateOffsetMovedEvent``: a system message telling operators a consumer jumped."""
        broker = self.broker
        if broker.topic_config_manager.select_topic_config(RMQ_SYS_OFFSET_MOVED_EVENT) is None:
            return
        body = fastjson.dumps(
            {
                "consumerGroup": group,
                "messageQueue": mq.to_json_obj(),
                "offsetNew": offset_new,
                "offsetRequest": offset_request,
            }
        ).encode()
        props = {MessageConst.TAGS: group, MessageConst.DELAY: "0", MessageConst.KEYS: group}
        now = int(time.time() * 1000)
        inner = MessageExtBrokerInner(
            topic=RMQ_SYS_OFFSET_MOVED_EVENT,
            queue_id=0,
            flag=0,
            body=body,
            properties=props,
            properties_string=encode_properties(props, java_order=True),
            tags_code=tags_code(group),
            sys_flag=0,
            born_timestamp=now,
            born_host=broker.store_host,
            store_host=broker.store_host,
        )
        try:
            result = broker.store.put_message(inner)
            if not result.ok:
                log.warning("storing an OFFSET_MOVED_EVENT failed: %s", result.status.name)
        except Exception:
            log.exception("storing an OFFSET_MOVED_EVENT failed")
