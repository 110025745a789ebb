"""``RouteBackoff``: look a subscribed topic's missing route up again on a short backoff.

rocketq only (issue #20; no Java counterpart): Java's consumers learn a topic created after
they started at the next route poll (``pollNameServerInterval``, 30 s). The push and the
lite pull consumer share this helper instead: a subscribed topic without a route is looked
up again after 1 s, 2 s, 4 s and then every 8 s (``ROUTE_RETRY_FIRST_MS`` doubling to
``ROUTE_RETRY_MAX_MS``) until it exists, then the client instance sends a heartbeat (the
topic's broker may be new to it) and rebalances at once.

Invariants: at most one retry chain per topic (a second :meth:`RouteBackoff.watch` of a
watched topic is a no-op), so one name-server request per missing topic per interval; a
chain ends once the route is known (by this lookup or by the regular route poll) or the
owner stops running. Callbacks run on the owner's scheduler thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocketq.client.instance import MQClientInstance

__all__ = ["ROUTE_RETRY_FIRST_MS", "ROUTE_RETRY_MAX_MS", "RouteBackoff"]

log = logging.getLogger(__name__)

#: First lookup of a missing route after this long ...
ROUTE_RETRY_FIRST_MS = 1000
#: ... doubling up to this interval, until the route appears (Java waits for the 30 s poll).
ROUTE_RETRY_MAX_MS = 8000


class RouteBackoff:
    """Retries the route lookup of subscribed topics that have none; see the module docstring.

    ``schedule(task, delay_ms)`` runs ``task`` later (the consumer's scheduler);
    ``is_missing(topic)`` says whether the topic still has no route; ``refresh(topic)`` asks
    the name server (and must not raise); ``instance()`` is the consumer's client instance
    (None before start); ``running()`` says whether the consumer still runs. ``group`` names
    the consumer group in the log line.
    """

    def __init__(
        self,
        *,
        schedule: Callable[[Callable[[], None], int], None],
        is_missing: Callable[[str], bool],
        refresh: Callable[[str], None],
        instance: Callable[[], MQClientInstance | None],
        running: Callable[[], bool],
        group: str,
    ) -> None:
        self._schedule = schedule
        self._is_missing = is_missing
        self._refresh = refresh
        self._instance = instance
        self._running = running
        self._group = group
        self._lock = threading.Lock()
        self._watched: set[str] = set()

    def watch(self, topic: str) -> None:
        """Start a retry chain for ``topic`` if it has no route and none is running."""
        if not self._is_missing(topic):
            return
        with self._lock:
            if topic in self._watched:
                return
            self._watched.add(topic)
        self._later(topic, ROUTE_RETRY_FIRST_MS)

    def _later(self, topic: str, delay_ms: int) -> None:
        self._schedule(lambda: self._retry(topic, delay_ms), delay_ms)

    def _retry(self, topic: str, delay_ms: int) -> None:
        if not self._running():
            self._forget(topic)
            return
        if self._is_missing(topic):
            self._refresh(topic)
        if self._is_missing(topic):
            self._later(topic, min(delay_ms * 2, ROUTE_RETRY_MAX_MS))
            return
        self._forget(topic)
        instance = self._instance()
        if instance is None:
            return
        log.info("topic %s of %s now has a route: rebalancing", topic, self._group)
        instance.send_heartbeat_to_all_broker_with_lock()
        instance.rebalance_immediately()

    def _forget(self, topic: str) -> None:
        with self._lock:
            self._watched.discard(topic)
