"""rocketq.remoting: the I/O floor between the sans-IO protocol and the client/broker.

* :mod:`rocketq.remoting.client` — :class:`RemotingClient` (``NettyRemotingClient``): one
  I/O thread, a blocking thread-safe API whose sync callers read their own answers (no
  thread hop), opaque matching, timeouts, server->client requests.
* :mod:`rocketq.remoting.server` — :class:`RemotingServer` (``NettyRemotingServer``) on
  asyncio, :class:`Channel`, :class:`RequestProcessor`, :class:`ServerThread`.

Background loops (``ServiceThread``) live in :mod:`rocketq.common.service_thread`.
"""

from __future__ import annotations

from rocketq.remoting.client import RemotingClient, RequestHandler
from rocketq.remoting.server import Channel, ChannelListener, RemotingServer, RequestProcessor, ServerThread

__all__ = [
    "Channel",
    "ChannelListener",
    "RemotingClient",
    "RemotingServer",
    "RequestHandler",
    "RequestProcessor",
    "ServerThread",
]
