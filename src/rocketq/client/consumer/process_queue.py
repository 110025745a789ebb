"""``ProcessQueue``: the offset-sorted cache of pulled, not yet consumed messages of one queue.

Mirrors ``org.apache.rocketmq.client.impl.consumer.ProcessQueue``. Invariants:

* ``_msgs`` maps queue offset -> message and ``_offsets`` holds the same keys sorted; the
  cached count and byte size always equal the sum over ``_msgs`` (plus, in orderly mode,
  the messages taken into ``_consuming`` and not yet committed).
* :meth:`remove_messages` returns the offset that is safe to commit: the smallest offset
  still cached, or (cache empty) the largest offset ever put + 1. A message that has not
  been consumed is therefore never skipped: with 0, 1 and 3 done and 2 still cached the
  answer is 2, never 4. A crash may re-deliver; it never loses.
* Java guards the tree map with a read-write lock; every operation here is short, so one
  mutex gives the same guarantees. ``consume_lock`` is the separate lock an orderly consume
  task holds while the listener runs, so a rebalance never drops a queue mid-batch.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable, Iterable, Sequence

from rocketq.protocol.bodies import ProcessQueueInfo
from rocketq.protocol.message import MessageConst, MessageExt

__all__ = [
    "PULL_MAX_IDLE_TIME_MS",
    "REBALANCE_LOCK_INTERVAL_MS",
    "REBALANCE_LOCK_MAX_LIVE_TIME_MS",
    "ProcessQueue",
]

#: ``rocketmq.client.rebalance.lockMaxLiveTime``: a lock not renewed for this long is expired.
REBALANCE_LOCK_MAX_LIVE_TIME_MS = 30_000
#: ``rocketmq.client.rebalance.lockInterval``: how often an orderly consumer renews its locks.
REBALANCE_LOCK_INTERVAL_MS = 20_000
#: ``rocketmq.client.pull.pullMaxIdleTime``: a queue not pulled for this long is dropped.
PULL_MAX_IDLE_TIME_MS = 120_000
#: ``cleanExpiredMsg`` looks at no more than this many of the oldest cached messages per run.
_CLEAN_EXPIRED_BATCH = 16


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ProcessQueue:
    """Pulled messages of one MessageQueue waiting for (or in) consumption."""

    def __init__(
        self,
        *,
        clock_ms: Callable[[], int] = _now_ms,
        lock_max_live_time_ms: int = REBALANCE_LOCK_MAX_LIVE_TIME_MS,
    ) -> None:
        self._clock_ms = clock_ms
        self.lock_max_live_time_ms = lock_max_live_time_ms
        self._lock = threading.Lock()
        self._msgs: dict[int, MessageExt] = {}
        self._offsets: list[int] = []
        self._consuming: dict[int, MessageExt] = {}
        self._msg_count = 0
        self._msg_size = 0
        self._queue_offset_max = 0
        self._consuming_flag = False
        #: held by an orderly consume task around the listener call
        self.consume_lock = threading.Lock()
        self.dropped = False
        self.locked = False
        self.try_unlock_times = 0
        self.msg_acc_cnt = 0
        now = clock_ms()
        self.last_pull_timestamp = now
        self.last_consume_timestamp = now
        self.last_lock_timestamp = now

    # ------------------------------------------------------------------ counters
    @property
    def msg_count(self) -> int:
        """Cached messages (in the map, plus taken but uncommitted in orderly mode)."""
        return self._msg_count

    @property
    def msg_size(self) -> int:
        """Cached body bytes, same scope as :attr:`msg_count`."""
        return self._msg_size

    @property
    def queue_offset_max(self) -> int:
        return self._queue_offset_max

    def max_span(self) -> int:
        """Largest minus smallest cached offset (``getMaxSpan``); 0 when empty."""
        with self._lock:
            if not self._offsets:
                return 0
            return self._offsets[-1] - self._offsets[0]

    def is_dropped(self) -> bool:
        """Whether a rebalance took this queue away (re-read each time: another thread sets it)."""
        return self.dropped

    def has_temp_message(self) -> bool:
        with self._lock:
            return bool(self._msgs)

    def min_offset(self) -> int | None:
        with self._lock:
            return self._offsets[0] if self._offsets else None

    # ------------------------------------------------------------------ concurrent use
    def put_messages(self, msgs: Iterable[MessageExt]) -> bool:
        """Cache pulled messages; True when an orderly consume task should be dispatched.

        Duplicates (same offset) are ignored. ``dispatch_to_consume`` is True only when the
        cache is non-empty and no consume task is running (``consuming`` flips to True).
        """
        with self._lock:
            cache = self._msgs
            offsets = self._offsets
            top = offsets[-1] if offsets else -1
            valid = size = 0
            last: MessageExt | None = None
            for msg in msgs:
                off = msg.queue_offset
                if off in cache:
                    continue
                cache[off] = msg
                if off > top:  # a pull is in offset order and after what is cached: no sort
                    offsets.append(off)
                    top = off
                else:
                    bisect.insort(offsets, off)
                valid += 1
                size += len(msg.body)
                last = msg
            self._msg_count += valid
            self._msg_size += size
            dispatch = False
            if cache and not self._consuming_flag:
                dispatch = True
                self._consuming_flag = True
            if last is not None:
                self._queue_offset_max = last.queue_offset
                max_offset = last.properties.get(MessageConst.MAX_OFFSET)
                if max_offset:
                    acc = int(max_offset) - last.queue_offset
                    if acc > 0:
                        self.msg_acc_cnt = acc
            return dispatch

    def remove_messages(self, msgs: Iterable[MessageExt]) -> int:
        """Forget consumed messages; return the offset safe to commit, or -1 if nothing was ever cached."""
        with self._lock:
            self.last_consume_timestamp = self._clock_ms()
            cache = self._msgs
            if not cache:
                return -1
            offsets = self._offsets
            result = self._queue_offset_max + 1
            removed: list[int] = []
            size = 0
            for msg in msgs:
                off = msg.queue_offset
                prev = cache.pop(off, None)
                if prev is not None:
                    removed.append(off)
                    size += len(prev.body)
            if removed:
                k = len(removed)
                if offsets[:k] == removed:  # the oldest ones, in order: one cut
                    del offsets[:k]
                else:
                    for off in removed:
                        del offsets[bisect.bisect_left(offsets, off)]
                self._msg_count -= k
                self._msg_size -= size
            if offsets:
                result = offsets[0]
            return result

    # ------------------------------------------------------------------ orderly use
    def take_messages(self, batch_size: int) -> list[MessageExt]:
        """Move up to ``batch_size`` of the smallest offsets into the consuming map."""
        with self._lock:
            self.last_consume_timestamp = self._clock_ms()
            n = min(batch_size, len(self._offsets))
            taken = self._offsets[:n]
            del self._offsets[:n]
            result = []
            for off in taken:
                msg = self._msgs.pop(off)
                self._consuming[off] = msg
                result.append(msg)
            if not result:
                self._consuming_flag = False
            return result

    def commit(self) -> int:
        """Orderly success: forget the consuming messages; return last offset + 1 (-1 if none)."""
        with self._lock:
            if not self._consuming:
                return -1
            offset = max(self._consuming)
            self._msg_count -= len(self._consuming)
            self._msg_size -= sum(len(m.body) for m in self._consuming.values())
            self._consuming.clear()
            return offset + 1

    def rollback(self) -> None:
        """Put every consuming message back into the cache (``rollback``)."""
        with self._lock:
            self._restore(list(self._consuming.values()))

    def make_message_to_consume_again(self, msgs: Sequence[MessageExt]) -> None:
        """Put these consuming messages back so they are taken again (``makeMessageToConsumeAgain``)."""
        with self._lock:
            self._restore(msgs)

    def _restore(self, msgs: Iterable[MessageExt]) -> None:
        for msg in msgs:
            off = msg.queue_offset
            self._consuming.pop(off, None)
            if off not in self._msgs:
                self._msgs[off] = msg
                bisect.insort(self._offsets, off)

    def is_consuming_empty(self) -> bool:
        with self._lock:
            return not self._consuming

    def clear(self) -> None:
        with self._lock:
            self._msgs.clear()
            self._offsets.clear()
            self._consuming.clear()
            self._msg_count = 0
            self._msg_size = 0
            self._queue_offset_max = 0

    # ------------------------------------------------------------------ expiry
    def is_lock_expired(self) -> bool:
        return self._clock_ms() - self.last_lock_timestamp > self.lock_max_live_time_ms

    def is_pull_expired(self) -> bool:
        return self._clock_ms() - self.last_pull_timestamp > PULL_MAX_IDLE_TIME_MS

    def expired_messages(self, consume_timeout_ms: int, now_wall_ms: int | None = None) -> list[MessageExt]:
        """Up to 16 of the oldest cached messages whose CONSUME_START_TIME is older than the timeout.

        The first half of ``cleanExpiredMsg``: the caller sends each back (delay level 3) and
        then calls :meth:`remove_if_first` for it. CONSUME_START_TIME is wall-clock ms.
        """
        now = int(time.time() * 1000) if now_wall_ms is None else now_wall_ms
        out: list[MessageExt] = []
        with self._lock:
            for off in self._offsets[:_CLEAN_EXPIRED_BATCH]:
                msg = self._msgs[off]
                start = msg.properties.get(MessageConst.CONSUME_START_TIME)
                if not start or now - int(start) <= consume_timeout_ms:
                    break
                out.append(msg)
        return out

    def remove_if_first(self, msg: MessageExt) -> int:
        """Remove ``msg`` if it is still the smallest cached offset; return the commit offset or -1."""
        with self._lock:
            if not self._offsets or self._offsets[0] != msg.queue_offset:
                return -1
        return self.remove_messages([msg])

    # ------------------------------------------------------------------ admin
    def info(self, commit_offset: int) -> ProcessQueueInfo:
        """``fillProcessQueueInfo`` for GET_CONSUMER_RUNNING_INFO (timestamps as wall-clock ms)."""
        shift = int(time.time() * 1000) - self._clock_ms()
        with self._lock:
            return ProcessQueueInfo(
                commit_offset=commit_offset,
                cached_msg_min_offset=self._offsets[0] if self._offsets else 0,
                cached_msg_max_offset=self._offsets[-1] if self._offsets else 0,
                cached_msg_count=len(self._msgs),
                cached_msg_size_in_mib=self._msg_size // (1024 * 1024),
                locked=self.locked,
                try_unlock_times=self.try_unlock_times,
                last_lock_timestamp=self.last_lock_timestamp + shift,
                dropped=self.dropped,
                last_pull_timestamp=self.last_pull_timestamp + shift,
                last_consume_timestamp=self.last_consume_timestamp + shift,
            )
