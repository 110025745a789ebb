"""The connector's own small client: queue lookups, offsets and raw pulls on the thread-free client core.

Spark runs the source on the driver (planning, commits) and on executors (one task per
message queue), both in short-lived Python workers. A full
:class:`~rocketq.client.instance.MQClientInstance` (heartbeats, rebalancing, route polling
threads) is the wrong tool there; :class:`SourceClient` is the thread-free client core of
:mod:`rocketq.client.impl`: a standalone
:class:`~rocketq.client.impl.mq_client_api.MQClientAPI` (one I/O thread),
:class:`~rocketq.client.impl.mq_admin_impl.MQAdminImpl` (route cache, offsets, search by time)
and :class:`~rocketq.client.impl.pull_api_wrapper.PullAPIWrapper` (the PULL_MESSAGE every
rocketq client sends). It does what ``DefaultMQPullConsumerImpl``/``MQAdminImpl`` do for a
pull consumer that owns its offsets (reference 6.2a, 7.2): route lookup,
GET_MIN/MAX_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, PULL_MESSAGE with the SUBSCRIPTION flag and
no COMMIT_OFFSET, UPDATE/QUERY_CONSUMER_OFFSET. It imports nothing from ``rocketq.remoting``.

Invariants: :meth:`SourceClient.close` joins the I/O thread, so a task that closes its
client leaves no thread behind in the Python worker; requests go to the broker master of the
queue (``MixAll.MASTER_ID``); a route is fetched again once when a broker name is unknown.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
from types import TracebackType
from typing import Final

from rocketq.acl.client_security import client_security_of
from rocketq.client.api_results import PullResult, PullStatus
from rocketq.client.config import parse_namesrv_addr
from rocketq.client.impl.mq_admin_impl import MQAdminImpl
from rocketq.client.impl.mq_client_api import MQClientAPI
from rocketq.client.impl.pull_api_wrapper import PullAPIWrapper
from rocketq.client.impl.topic_route import topic_route_to_subscribe_info
from rocketq.errors import BrokerError, ClientError
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.message import decode_records
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.route import TopicRouteData
from rocketq.spark.options import SecurityOptions

__all__ = ["DEFAULT_READER_GROUP", "SourceClient"]

log = logging.getLogger(__name__)

#: The consumer group named in pulls when the ``consumerGroup`` option is not set.
DEFAULT_READER_GROUP: Final = "rocketq_spark_reader"
_ADMIN_TIMEOUT_MS: Final = 10_000
_names = itertools.count(1)


class SourceClient:
    """Lookups, offsets and pulls against one cluster; a context manager (``close()``)."""

    def __init__(
        self,
        nameserver: str,
        *,
        group: str | None = None,
        timeout_ms: int = 30_000,
        sub_expression: str = "*",
        expression_type: str = "TAG",
        security: SecurityOptions | None = None,
    ) -> None:
        self.group = group or DEFAULT_READER_GROUP
        self.timeout_ms = timeout_ms
        self.sub_expression = sub_expression
        #: ``TAG`` or ``SQL92`` (then ``sub_expression`` is the SQL text, filtered on the broker)
        self.expression_type = expression_type
        rpc_hook, ssl_context = client_security_of(security or SecurityOptions())
        self.api = MQClientAPI.standalone(
            parse_namesrv_addr(nameserver),
            name=f"rocketq-spark-{next(_names)}",
            rpc_hook=rpc_hook,
            ssl_context=ssl_context,
        )
        self.api.start()
        self.admin = MQAdminImpl(self.api, timeout_ms=_ADMIN_TIMEOUT_MS)
        self._puller = PullAPIWrapper(self.admin, self.group)

    def close(self) -> None:
        """Close every connection and join the I/O thread (idempotent)."""
        self.api.close()

    def __enter__(self) -> SourceClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ routes
    def route(self, topic: str, *, refresh: bool = False) -> TopicRouteData:
        """The topic's route; raises :class:`ClientError` when the topic does not exist."""
        route = self.admin.route(topic, refresh=refresh)
        if route is None:
            raise ClientError(f"topic {topic} does not exist (no route on the name server)")
        return route

    def queues(self, topic: str) -> list[MessageQueue]:
        """Every readable queue of ``topic`` (fresh from the name server), sorted
        (``MQClientInstance.topicRouteData2TopicSubscribeInfo``)."""
        return sorted(topic_route_to_subscribe_info(topic, self.route(topic, refresh=True)))

    def master_addr(self, mq: MessageQueue) -> str:
        """The master address of the queue's broker (route refreshed once if unknown)."""
        self.route(mq.topic)
        return self.admin.master_addr(mq)

    # ------------------------------------------------------------------ offsets
    def min_offset(self, mq: MessageQueue) -> int:
        """GET_MIN_OFFSET: the smallest offset still stored."""
        self.route(mq.topic)
        return self.admin.min_offset(mq)

    def max_offset(self, mq: MessageQueue) -> int:
        """GET_MAX_OFFSET: the offset the next message will get."""
        self.route(mq.topic)
        return self.admin.max_offset(mq)

    def first_offset_at(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The first offset whose message was stored at or after ``timestamp_ms`` (max
        offset when there is none).

        SEARCH_OFFSET_BY_TIMESTAMP answers the entry *nearest* to the time
        (``ConsumeQueue.getOffsetInQueueByTime``), which may be just before it or one of
        several entries with the same store time; the answer is corrected by reading the
        store timestamps around it.
        """
        low, high = self.min_offset(mq), self.max_offset(mq)
        if low >= high:
            return high
        found = self.admin.search_offset(mq, timestamp_ms)
        offset = min(max(found, low), high)
        # step back while the previous entries are not older than the timestamp
        while offset > low:
            begin = max(offset - 32, low)
            times = self._store_times(mq, begin, offset - begin)
            older = [off for off, ts in times if ts < timestamp_ms and off < offset]
            if older:
                offset = max(older) + 1
                break
            offset = begin
        # step forward over entries older than the timestamp
        while offset < high:
            times = self._store_times(mq, offset, 32)
            if not times:
                break
            newer = [off for off, ts in times if ts >= timestamp_ms]
            if newer:
                return min(newer)
            offset = times[-1][0] + 1
        return min(offset, high)

    def _store_times(self, mq: MessageQueue, offset: int, count: int) -> list[tuple[int, int]]:
        if count <= 0:
            return []
        result = self.pull(mq, offset, count, sub_expression="*")
        if result.pull_status is not PullStatus.FOUND:
            return []
        return [(m.queue_offset, m.store_timestamp) for m in decode_records(result.message_binary)]

    def update_consumer_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        """UPDATE_CONSUMER_OFFSET (waits for the broker), as the offset store persists it."""
        self.api.update_consumer_offset(
            self.master_addr(mq),
            group,
            mq.topic,
            mq.queue_id,
            offset,
            _ADMIN_TIMEOUT_MS,
            bname=mq.broker_name,
        )

    def query_consumer_offset(self, group: str, mq: MessageQueue) -> int:
        """QUERY_CONSUMER_OFFSET; -1 when the group has no offset for the queue."""
        try:
            return self.api.query_consumer_offset(
                self.master_addr(mq), group, mq.topic, mq.queue_id, _ADMIN_TIMEOUT_MS, bname=mq.broker_name
            )
        except BrokerError as exc:
            if exc.code == ResponseCode.QUERY_NOT_FOUND:
                return -1
            raise

    # ------------------------------------------------------------------ pulls
    def pull(
        self, mq: MessageQueue, offset: int, max_nums: int, *, sub_expression: str | None = None
    ) -> PullResult:
        """One PULL_MESSAGE; the records stay undecoded in ``message_binary``."""
        self.route(mq.topic)
        return self._puller.pull_read_only(
            mq,
            offset,
            max_nums,
            self.timeout_ms,
            sub_expression=self.sub_expression if sub_expression is None else sub_expression,
            expression_type=self.expression_type if sub_expression is None else "TAG",
        )

    def pull_async(
        self, mq: MessageQueue, offset: int, max_nums: int, *, sub_expression: str | None = None
    ) -> concurrent.futures.Future[PullResult]:
        """Like :meth:`pull`, without waiting (the future completes on the I/O thread)."""
        self.route(mq.topic)
        return self._puller.pull_read_only_async(
            mq,
            offset,
            max_nums,
            self.timeout_ms,
            sub_expression=self.sub_expression if sub_expression is None else sub_expression,
            expression_type=self.expression_type if sub_expression is None else "TAG",
        )
