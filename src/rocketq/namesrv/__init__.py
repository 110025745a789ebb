"""rocketq.namesrv: the name server (Apache RocketMQ ``namesrv`` module).

* :mod:`rocketq.namesrv.config` — :class:`NamesrvConfig` (``NamesrvConfig`` +
  ``NettyServerConfig``) and the Java properties text format.
* :mod:`rocketq.namesrv.route_info` — :class:`RouteInfoManager`: the routing tables (pure).
* :mod:`rocketq.namesrv.kv_config` — :class:`KVConfigManager`: the persisted KV table.
* :mod:`rocketq.namesrv.processor` — :class:`DefaultRequestProcessor`: one handler per code.
* :mod:`rocketq.namesrv.namesrv` — :class:`NamesrvController` (asyncio) and
  :class:`NamesrvThread` (a controller on its own loop in a thread).
"""

from __future__ import annotations

from rocketq.namesrv.config import NamesrvConfig
from rocketq.namesrv.kv_config import KVConfigManager
from rocketq.namesrv.namesrv import NamesrvController, NamesrvThread
from rocketq.namesrv.processor import DefaultRequestProcessor
from rocketq.namesrv.route_info import RouteInfoManager

__all__ = [
    "DefaultRequestProcessor",
    "KVConfigManager",
    "NamesrvConfig",
    "NamesrvController",
    "NamesrvThread",
    "RouteInfoManager",
]
