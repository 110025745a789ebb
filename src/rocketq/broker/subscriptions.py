"""Consumer-group settings: ``SubscriptionGroupManager``.

Mirrors ``org.apache.rocketmq.broker.subscription.SubscriptionGroupManager`` (4.9.7).

Invariants:

* Seven system groups exist from construction on, as in Java ``init()`` (without bumping
  the data version): TOOLS_CONSUMER, FILTERSRV_CONSUMER, SELF_TEST_C_GROUP,
  CID_ONS-HTTP-PROXY, CID_ONSAPI_PULL, CID_ONSAPI_PERMISSION, CID_ONSAPI_OWNER.
* :meth:`SubscriptionGroupManager.find_subscription_group_config` auto-creates a group
  with Java defaults when ``auto_create_subscription_group`` is on (or the group is a
  system group, ``MixAll.isSysConsumerGroup``: prefix ``CID_RMQ_SYS_``), bumping the data
  version and persisting ``<root>/config/subscriptionGroup.json`` (``persist_soon``:
  coalesced, off the event loop). Auto-creation of non-system groups is bounded like the
  topics' (``topics.AUTO_CREATE_PER_SECOND``/``AUTO_CREATE_BURST``): over it the group is
  not created now and the client's next heartbeat asks again.
* The file is written in ``ConcurrentHashMap(1024)`` iteration order, fastjson pretty
  format (``{"dataVersion":...,"subscriptionGroupTable":...}``), byte-compatible with a
  4.9.7 broker's file.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from rocketq.broker.config import BrokerConfig, ConfigManager, config_file_path
from rocketq.broker.topics import (
    AUTO_CREATE_BURST,
    AUTO_CREATE_LOG,
    AUTO_CREATE_PER_SECOND,
    next_data_version,
)
from rocketq.common.token_bucket import TokenBucket
from rocketq.protocol import fastjson
from rocketq.protocol.bodies import SubscriptionGroupConfig, SubscriptionGroupWrapper
from rocketq.protocol.java import concurrent_hashmap_order
from rocketq.protocol.mixall import CID_RMQ_SYS_PREFIX, TOOLS_CONSUMER_GROUP
from rocketq.protocol.route import DataVersion

__all__ = ["SYSTEM_GROUPS", "SubscriptionGroupManager", "is_sys_consumer_group"]

log = logging.getLogger(__name__)

#: MixAll group constants created by ``SubscriptionGroupManager.init`` (in that order).
SYSTEM_GROUPS: tuple[str, ...] = (
    TOOLS_CONSUMER_GROUP,
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
)
#: ``subscriptionGroupTable = new ConcurrentHashMap<>(1024)``
_TABLE_CAPACITY = 1024


def is_sys_consumer_group(group: str) -> bool:
    """``MixAll.isSysConsumerGroup``."""
    return group.startswith(CID_RMQ_SYS_PREFIX)


def _wall_ms() -> int:
    return time.time_ns() // 1_000_000


class SubscriptionGroupManager(ConfigManager):
    """Subscription-group configs of one broker (``SubscriptionGroupManager``)."""

    def __init__(self, config: BrokerConfig, *, wall_ms: Callable[[], int] = _wall_ms) -> None:
        self._config = config
        self._wall_ms = wall_ms
        self._lock = threading.RLock()
        self.subscription_group_table: dict[str, SubscriptionGroupConfig] = {
            g: SubscriptionGroupConfig(group_name=g) for g in SYSTEM_GROUPS
        }
        self.data_version = DataVersion(timestamp=wall_ms(), counter=0)
        #: Bounds auto-creation by anonymous clients (system groups are exempt).
        self.auto_create_limit = TokenBucket(AUTO_CREATE_PER_SECOND, AUTO_CREATE_BURST)

    def update_config(self, config: BrokerConfig) -> None:
        """Read ``config`` from now on (updateBrokerConfig of ``autoCreateSubscriptionGroup``)."""
        self._config = config

    def find_subscription_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config; auto-created with Java defaults if allowed, else None."""
        found = self.subscription_group_table.get(group)
        if found is not None:
            return found
        system = is_sys_consumer_group(group)
        if not (self._config.auto_create_subscription_group or system):
            return None
        if not system and not self.auto_create_limit.try_acquire():
            # a flood of new names: not created now, the client's next heartbeat retries
            AUTO_CREATE_LOG.warning(
                "group", "auto-creation of subscription groups over its bound, %s not created now", group
            )
            return None
        with self._lock:
            found = self.subscription_group_table.get(group)
            if found is not None:
                return found
            found = SubscriptionGroupConfig(group_name=group)
            self.subscription_group_table[group] = found
            self.data_version = next_data_version(self.data_version, self._wall_ms())
        log.info("auto-created subscription group %s", group)
        self.persist_soon()
        return found

    def update_subscription_group_config(self, sgc: SubscriptionGroupConfig) -> None:
        """``updateSubscriptionGroupConfig``: put, bump, persist."""
        with self._lock:
            self.subscription_group_table[sgc.group_name or ""] = sgc
            self.data_version = next_data_version(self.data_version, self._wall_ms())
        log.info("updated subscription group %s", sgc)
        self.persist()

    def delete_subscription_group_config(self, group: str) -> None:
        """``deleteSubscriptionGroupConfig``: remove; bump and persist only if it existed."""
        with self._lock:
            old = self.subscription_group_table.pop(group, None)
            if old is None:
                log.warning("delete subscription group %s: not found", group)
                return
            self.data_version = next_data_version(self.data_version, self._wall_ms())
        self.persist()

    def build_wrapper(self) -> SubscriptionGroupWrapper:
        """A snapshot in Java iteration order (the GET_ALL_SUBSCRIPTIONGROUP_CONFIG body)."""
        with self._lock:
            table = dict(self.subscription_group_table)
            dv = self.data_version
        ordered = {k: table[k] for k in concurrent_hashmap_order(list(table), _TABLE_CAPACITY)}
        return SubscriptionGroupWrapper(subscription_group_table=ordered, data_version=dv)

    # ------------------------------------------------------------------ persistence
    def config_file_path(self) -> str:
        return config_file_path(self._config.store_path_root_dir, "subscriptionGroup.json")

    def encode(self, pretty: bool = False) -> str:
        return fastjson.dumps(self.build_wrapper(), pretty=pretty)

    def decode(self, text: str) -> None:
        wrapper = SubscriptionGroupWrapper.from_json(text)
        with self._lock:
            self.subscription_group_table.update(wrapper.subscription_group_table)
            if wrapper.data_version is not None:
                self.data_version = wrapper.data_version
