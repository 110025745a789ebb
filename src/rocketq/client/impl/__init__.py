"""rocketq.client.impl: the thread-free client core every client role sits on.

Mirrors ``org.apache.rocketmq.client.impl``: no module here starts a thread of its own;
each works over one :class:`~rocketq.remoting.client.RemotingClient` (one I/O thread,
owned by whoever created it) and blocks only the caller.

* :mod:`rocketq.client.impl.mq_client_api` — :class:`MQClientAPI` (``MQClientAPIImpl``):
  one typed method per RPC, request stamping, response-code checks.
* :mod:`rocketq.client.impl.pull_api_wrapper` — :class:`PullAPIWrapper`: the one place a
  PULL_MESSAGE header is built, the broker of a queue chosen and a pull result processed.
* :mod:`rocketq.client.impl.mq_admin_impl` — :class:`MQAdminImpl`: routes (with a route
  cache), readable queues, broker addresses, offsets, search by time, view message.

The push, pull and lite-pull consumers, the schedule service, :mod:`rocketq.admin` and
:mod:`rocketq.spark` all reach brokers through these classes.
"""

from __future__ import annotations

__all__: list[str] = []
