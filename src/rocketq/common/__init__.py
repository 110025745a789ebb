"""rocketq.common: plumbing shared by every floor above ``protocol/`` (client, broker, name
server, admin, edges), as Java's ``rocketmq-common`` module is.

* :mod:`rocketq.common.file_lock` — an exclusive lock on a store or config directory.
* :mod:`rocketq.common.log_limiter` — :class:`LogLimiter`, rate-limited repeats of a log line.
* :mod:`rocketq.common.token_bucket` — :class:`TokenBucket`, a bound on events per second.
* :mod:`rocketq.common.service_thread` — :class:`ServiceThread` (``ServiceThread``), the one
  base of every background loop, and :class:`PeriodicService` (a fixed-rate task with wakeup).
* :mod:`rocketq.common.service_state` — :class:`ServiceState` (``ServiceState``) and
  :class:`ServiceLifecycle`, the life cycle every producer and consumer shares.
* :mod:`rocketq.common.scheduler` — :class:`ScheduledExecutor`, the one scheduler of delayed
  one-off tasks (``ScheduledExecutorService``).
"""

from __future__ import annotations

__all__: list[str] = []
