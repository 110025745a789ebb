"""rocketq.common: plumbing shared by every floor above ``protocol/`` (client, broker, name
server, admin, edges), as Java's ``rocketmq-common`` module is.

* :mod:`rocketq.common.log_limiter` — :class:`LogLimiter`, rate-limited repeats of a log line.
* :mod:`rocketq.common.token_bucket` — :class:`TokenBucket`, a bound on events per second.
"""

from __future__ import annotations

__all__: list[str] = []
