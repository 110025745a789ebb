"""rocketq.aio: the asyncio client, native on the caller's event loop.

No thread of its own: connections are :class:`asyncio.Protocol` objects on the running loop
(:mod:`rocketq.aio.remoting`), background work (routes, heartbeats, rebalance, offset
persistence, pulls) runs as tasks of that loop, and listeners are coroutines. The rules
(message preparation, queue choice, fault tolerance, allocation, offset rules, process-queue
bookkeeping) are the blocking client's own, imported, not copied. Works with uvloop.
"""

from rocketq.aio.consume import AsyncConcurrentListener, AsyncOrderlyListener
from rocketq.aio.lite_pull import AsyncLitePullConsumer
from rocketq.aio.producer import AsyncProducer
from rocketq.aio.producer_transaction import AsyncTransactionListener, AsyncTransactionProducer
from rocketq.aio.push import AsyncPushConsumer
from rocketq.aio.remoting import AsyncRemotingClient, RequestHook

__all__ = [
    "AsyncConcurrentListener",
    "AsyncLitePullConsumer",
    "AsyncOrderlyListener",
    "AsyncProducer",
    "AsyncPushConsumer",
    "AsyncRemotingClient",
    "AsyncTransactionListener",
    "AsyncTransactionProducer",
    "RequestHook",
]
