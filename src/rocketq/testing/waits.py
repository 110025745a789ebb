"""Polling helpers for tests against a live cluster (:class:`~rocketq.testing.cluster.EmbeddedCluster`).

* :func:`wait_until` (and :func:`async_wait_until` for asyncio tests) polls a condition until
  it holds, else fails the test with
  :class:`AssertionError` naming what was awaited.
* :func:`committed_lag` is a group's total lag at the broker, or None while the broker holds
  no committed offset of the group yet (a consumer commits on its next persist or pull).
* :func:`wait_for_dlq` reads queue 0 of ``%DLQ%<group>`` (``MixAll.getDLQTopic``; a DLQ
  topic has one queue, ``SendMessageProcessor``) with a :class:`PullConsumer` until
  it holds messages.

Nothing here is used by the library itself; it lives beside the fixtures so every test
module shares one copy.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from rocketq.admin.admin import Admin
from rocketq.client.consumer.pull import PullConsumer
from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_queue import MessageQueue
from rocketq.protocol.mixall import dlq_topic
from rocketq.testing.cluster import EmbeddedCluster

__all__ = ["async_wait_until", "committed_lag", "wait_for_dlq", "wait_until"]


def wait_until(
    cond: Callable[[], bool], timeout_s: float = 20.0, what: str = "condition", *, interval_s: float = 0.05
) -> None:
    """Poll ``cond`` every ``interval_s`` until it is true; AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval_s)


async def async_wait_until(
    cond: Callable[[], bool], timeout_s: float = 20.0, what: str = "condition", *, interval_s: float = 0.05
) -> None:
    """:func:`wait_until` for asyncio tests: polls ``cond`` without blocking the event loop."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(interval_s)


def committed_lag(admin: Admin, group: str) -> int | None:
    """The group's total lag over its brokers (``ConsumeStats.computeTotalDiff``), or None
    while no broker holds an offset of the group (before a consumer's first commit, when
    ``consumerProgress`` refuses)."""
    stats = admin.consume_stats(group)
    return stats.compute_total_diff() if stats.offset_table else None


def wait_for_dlq(
    cluster: EmbeddedCluster, group: str, reader_group: str, timeout_s: float = 20.0
) -> list[MessageExt]:
    """The messages of ``%DLQ%<group>`` on the cluster's first broker, once there are any.

    Pulls (group ``reader_group``, offset 0, up to 32) until the pull finds messages; a pull
    that fails (the DLQ topic not created yet) counts as "not yet".
    """
    dlq = MessageQueue(dlq_topic(group), cluster.broker_names[0], 0)
    puller = PullConsumer(reader_group, namesrv_addr=cluster.namesrv_addr)
    puller.start()
    try:
        found: list[MessageExt] = []

        def has_messages() -> bool:
            try:
                found[:] = puller.pull(dlq, "*", 0, 32).msg_found_list
            except Exception:  # any failure means "not there yet"
                return False
            return bool(found)

        wait_until(has_messages, timeout_s, "the DLQ message")
        return found
    finally:
        puller.shutdown()
