"""Rate-limited logging of repeated lines: one line per key per interval, with a count of the
repeats that were left out.

A broker facing a flood of bad frames, or a client whose broker restarts, would otherwise write
the same warning thousands of times. :class:`LogLimiter` lets the first occurrence of a key
through, drops the repeats for ``interval_s`` seconds while counting them, and appends
``(N similar suppressed)`` to the next line it lets through for that key.

Invariants:

* Thread-safe: one lock guards the table; the logging call itself runs outside it.
* Bounded: at most ``max_keys`` keys are remembered (oldest forgotten first), so keys built
  from peer addresses cannot grow memory without bound.
* The clock is injected (``time.monotonic`` by default) so the window is unit-tested without
  sleeping.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

__all__ = ["LogLimiter"]


class LogLimiter:
    """Lets one line per key through every ``interval_s`` seconds (default 10 s).

    ``limiter.log(logging.WARNING, key, "msg %s", arg)`` logs through ``logger`` when ``key``
    was not logged in the last ``interval_s`` seconds and returns True; otherwise it counts the
    line as suppressed and returns False.
    """

    def __init__(
        self,
        logger: logging.Logger,
        *,
        interval_s: float = 10.0,
        max_keys: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s < 0:
            raise ValueError(f"interval_s must be >= 0, got {interval_s}")
        if max_keys < 1:
            raise ValueError(f"max_keys must be >= 1, got {max_keys}")
        self.logger = logger
        self.interval_s = interval_s
        self.max_keys = max_keys
        self._clock = clock
        self._lock = threading.Lock()
        # key -> [time the key was last let through, repeats suppressed since]
        self._seen: OrderedDict[Hashable, list[float]] = OrderedDict()
        self._suppressed_total = 0

    @property
    def suppressed_total(self) -> int:
        """Lines left out since this limiter was made, over every key."""
        return self._suppressed_total

    def log(self, level: int, key: Hashable, msg: str, *args: object) -> bool:
        """Log ``msg % args`` at ``level`` unless ``key`` was logged within the interval."""
        if not self.logger.isEnabledFor(level):
            return False
        now = self._clock()
        with self._lock:
            entry = self._seen.get(key)
            if entry is not None and now - entry[0] < self.interval_s:
                entry[1] += 1
                self._suppressed_total += 1
                return False
            suppressed = int(entry[1]) if entry is not None else 0
            self._seen[key] = [now, 0]
            self._seen.move_to_end(key)
            while len(self._seen) > self.max_keys:
                self._seen.popitem(last=False)
        if suppressed:
            self.logger.log(level, msg + " (%d similar suppressed)", *args, suppressed)
        else:
            self.logger.log(level, msg, *args)
        return True

    def warning(self, key: Hashable, msg: str, *args: object) -> bool:
        """:meth:`log` at WARNING."""
        return self.log(logging.WARNING, key, msg, *args)

    def info(self, key: Hashable, msg: str, *args: object) -> bool:
        """:meth:`log` at INFO."""
        return self.log(logging.INFO, key, msg, *args)
