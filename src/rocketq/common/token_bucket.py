"""A token bucket: at most ``rate_per_s`` events per second on average, ``burst`` at once.

Used by the broker to bound what anonymous clients may make it create (subscription groups
and topics auto-created from heartbeats and sends); Java has no such bound, a flood of new
names there grows the config files without limit.

Invariants: thread-safe (one lock); the clock is injected (``time.monotonic`` by default);
the bucket starts full.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["TokenBucket"]


class TokenBucket:
    """``try_acquire()`` is True while tokens are left; they come back at ``rate_per_s``."""

    def __init__(self, rate_per_s: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if rate_per_s <= 0 or burst < 1:
            raise ValueError(f"rate_per_s must be > 0 and burst >= 1, got {rate_per_s}, {burst}")
        self.rate_per_s = rate_per_s
        self.burst = burst
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock()

    def try_acquire(self) -> bool:
        """Take one token if there is one."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate_per_s)
            self._last = now
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False
