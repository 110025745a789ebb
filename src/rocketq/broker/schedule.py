"""Delay levels: deliver messages parked in ``SCHEDULE_TOPIC_XXXX`` when their time comes.

Mirrors ``org.apache.rocketmq.store.schedule.ScheduleMessageService`` (4.9.x; reference
5.1-5.2). Invariants:

* Queue ``level - 1`` of the schedule topic holds the messages of one delay level, in
  append order, so their delivery times are non-decreasing: a level's scan stops at the
  first message that is not due yet.
* A due message is re-put into its ``REAL_TOPIC``/``REAL_QID`` with ``DELAY`` removed from
  the property map (so it is not parked again) but still present in the stored property
  string, ``WAIT=false``, and body, flags, hosts, born time and reconsume count unchanged —
  byte-for-byte what a Java broker stores (golden MESSAGES.json).
* The next offset to deliver per level is persisted to ``config/delayOffset.json``
  (fastjson form ``{"offsetTable":{3:2}}``) every few seconds and at shutdown; a restart
  resumes there, so a delayed message is delivered at least once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rocketq.broker.config import write_config_file
from rocketq.broker.store import MessageExtBrokerInner, MessageStore, PutMessageStatus
from rocketq.common.service_thread import ServiceThread
from rocketq.protocol import fastjson
from rocketq.protocol.message import MessageConst, decode_record, encode_properties, tags_code
from rocketq.protocol.mixall import RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_CONSUMER_GROUP

__all__ = ["ScheduleMessageService", "parse_delay_levels"]

log = logging.getLogger(__name__)

_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
#: ``DELAY_FOR_A_WHILE`` / ``DELAY_FOR_A_PERIOD``: re-check soon / back off after an error.
_CHECK_INTERVAL_S = 0.1
_ERROR_BACKOFF_S = 10.0
_PERSIST_INTERVAL_S = 10.0


def parse_delay_levels(spec: str) -> dict[int, int]:
    """``parseDelayLevel``: ``"1s 5s 10s ..."`` -> {1: 1000, 2: 5000, ...}."""
    table: dict[int, int] = {}
    for level, token in enumerate(spec.split(), start=1):
        unit = token[-1]
        if unit not in _UNITS_MS or not token[:-1].isdigit():
            raise ValueError(f"illegal delay level {token!r} in {spec!r}")
        table[level] = int(token[:-1]) * _UNITS_MS[unit]
    if not table:
        raise ValueError("messageDelayLevel is empty")
    return table


class _DeliveryLoop(ServiceThread):
    """The ``ScheduleMessageService`` thread: rounds until shutdown, a wakeup cuts a wait short."""

    def __init__(self, service: ScheduleMessageService) -> None:
        super().__init__("ScheduleMessageService", interval_s=None, join_timeout_s=10.0)
        self._service = service

    def run_once(self) -> None:
        self.wait_for_running(self._service.run_round())


class ScheduleMessageService:
    """One thread delivering every delay level of one store."""

    def __init__(
        self,
        store: MessageStore,
        delay_levels: str,
        config_dir: str | Path,
        *,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.store = store
        self.delay_table = parse_delay_levels(delay_levels)
        self.path = Path(config_dir) / "delayOffset.json"
        self._clock_ms = clock_ms
        self.offset_table: dict[int, int] = {}
        self._loop = _DeliveryLoop(self)
        self._last_persist = time.monotonic()
        self._lock = threading.Lock()

    @property
    def max_delay_level(self) -> int:
        return max(self.delay_table)

    # ------------------------------------------------------------------ persistence
    def load(self) -> None:
        """Read ``delayOffset.json`` if present (a missing file means start from 0)."""
        if not self.path.exists():
            return
        data = fastjson.loads(self.path.read_bytes())
        table = data.get("offsetTable", {}) if isinstance(data, dict) else {}
        if isinstance(table, dict):
            self.offset_table = {int(str(k)): int(str(v)) for k, v in table.items()}

    def persist(self) -> None:
        with self._lock:
            table = dict(self.offset_table)
        text = fastjson.dumps({"offsetTable": table}, pretty=True)
        try:
            write_config_file(str(self.path), text)
        except OSError as exc:  # a full disk: the offsets are rebuilt from the last file
            log.error("cannot persist %s: %s", self.path, exc)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.load()
        self._last_persist = time.monotonic()
        self._loop.start()

    def shutdown(self) -> None:
        self._loop.shutdown()
        self.persist()

    def wakeup(self) -> None:
        self._loop.wakeup()

    # ------------------------------------------------------------------ delivery
    def run_round(self) -> float:
        """One round of the delivery thread: deliver what is due, persist every 10 s; the
        seconds to wait before the next round (longer after an error)."""
        wait_s = _CHECK_INTERVAL_S
        try:
            self.deliver_due()
        except Exception:
            log.exception("delivering delayed messages failed")
            wait_s = _ERROR_BACKOFF_S
        if time.monotonic() - self._last_persist >= _PERSIST_INTERVAL_S:
            try:
                self.persist()
            except OSError:
                log.exception("persisting delayOffset.json failed")
            self._last_persist = time.monotonic()
        return wait_s

    def deliver_due(self) -> int:
        """Deliver every message whose time has come; return how many were delivered."""
        delivered = 0
        for level, delay_ms in self.delay_table.items():
            delivered += self._deliver_level(level, delay_ms)
        return delivered

    def _deliver_level(self, level: int, delay_ms: int) -> int:
        store = self.store
        queue_id = level - 1
        delivered = 0
        while not self._loop.stopped:
            with self._lock:
                offset = self.offset_table.get(level, 0)
            min_offset = store.get_min_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, queue_id)
            offset = max(offset, min_offset)
            if offset >= store.get_max_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, queue_id):
                return delivered
            result = store.get_message(
                SCHEDULE_CONSUMER_GROUP, RMQ_SYS_SCHEDULE_TOPIC, queue_id, offset, 32, None
            )
            if not result.buffers:
                with self._lock:
                    self.offset_table[level] = max(result.next_begin_offset, offset)
                return delivered
            now = self._clock_ms()
            for buf, queue_offset in zip(result.buffers, result.message_queue_offsets, strict=False):
                msg = decode_record(buf, decompress=False)
                deliver_at = msg.store_timestamp + delay_ms
                # correctDeliverTimestamp: never wait longer than the level's delay from now
                deliver_at = min(deliver_at, now + delay_ms)
                if deliver_at > now:
                    return delivered
                props = dict(msg.properties)
                stored = encode_properties(props, java_order=True)
                props.pop(MessageConst.DELAY, None)
                props[MessageConst.WAIT] = "false"
                real_topic = props.get(MessageConst.REAL_TOPIC)
                real_qid = props.get(MessageConst.REAL_QID)
                if real_topic is None or real_qid is None:
                    log.error("delayed message at %d lacks REAL_TOPIC/REAL_QID; dropped", queue_offset)
                else:
                    inner = MessageExtBrokerInner(
                        topic=real_topic,
                        queue_id=int(real_qid),
                        flag=msg.flag,
                        body=msg.body,
                        properties=props,
                        properties_string=stored,
                        tags_code=tags_code(props.get(MessageConst.TAGS)),
                        sys_flag=msg.sys_flag,
                        born_timestamp=msg.born_timestamp,
                        born_host=msg.born_host,
                        store_host=msg.store_host,
                        reconsume_times=msg.reconsume_times,
                    )
                    put = store.put_message(inner)
                    if put.status != PutMessageStatus.PUT_OK:
                        log.error("re-putting a delayed message failed: %s; retrying later", put.status.name)
                        raise RuntimeError(put.status.name)
                    delivered += 1
                with self._lock:
                    self.offset_table[level] = queue_offset + 1
        return delivered
