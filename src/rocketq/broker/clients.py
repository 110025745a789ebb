"""Who is connected: producer and consumer groups per channel.

Mirrors ``org.apache.rocketmq.broker.client`` of 4.9.7: ``ClientChannelInfo``,
``ConsumerGroupInfo``, ``ConsumerManager``, ``ProducerManager``, ``ConsumerGroupEvent`` and
the scan half of ``ClientHousekeepingService``.

Invariants:

* A consumer group lives while it has at least one channel; the last channel leaving
  removes the group (``UNREGISTER`` event).
* ``register_consumer`` reports a change when a channel joins or a topic is added to or
  removed from the group's subscriptions. Quirk kept from ``ConsumerGroupInfo.updateSubscription``:
  a newer ``subVersion`` for an existing topic replaces the subscription but is *not* a
  change (no NOTIFY).
* Every change of a group's channels or subscriptions fires ``ConsumerGroupEvent.CHANGE``
  with the group's remaining channels (the broker sends NOTIFY_CONSUMER_IDS_CHANGED to each);
  a closed channel is removed from every group at once (``doChannelCloseEvent``).
* Channels without a heartbeat for ``channel_expired_timeout_ms`` (120 s) are closed and
  removed by :meth:`ConsumerManager.scan_not_active_channel` /
  :meth:`ProducerManager.scan_not_active_channel` (every 10 s, ``ClientHousekeepingService``).
* Time comes from the injected ``clock_ms`` (monotonic by default); all methods are
  thread-safe.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rocketq.protocol.heartbeat import ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData
from rocketq.remoting.server import Channel

__all__ = [
    "ClientChannelInfo",
    "ConsumerGroupEvent",
    "ConsumerGroupInfo",
    "ConsumerIdsChangeListener",
    "ConsumerManager",
    "ProducerManager",
]

log = logging.getLogger(__name__)

#: ConsumerManager / ProducerManager.CHANNEL_EXPIRED_TIMEOUT
CHANNEL_EXPIRED_TIMEOUT_MS = 120_000


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ConsumerGroupEvent(enum.Enum):
    """``ConsumerGroupEvent``."""

    CHANGE = "CHANGE"
    UNREGISTER = "UNREGISTER"
    REGISTER = "REGISTER"


#: ``ConsumerIdsChangeListener.handle(event, group, channels)``; channels are the group's
#: channels after the change (empty for UNREGISTER/REGISTER).
ConsumerIdsChangeListener = Callable[[ConsumerGroupEvent, str, list[Channel]], None]


@dataclass(eq=False)
class ClientChannelInfo:
    """One client on one channel (``ClientChannelInfo``)."""

    channel: Channel
    client_id: str
    language: int
    version: int
    last_update_ms: int = 0


class ConsumerGroupInfo:
    """The channels and subscriptions of one consumer group (``ConsumerGroupInfo``)."""

    def __init__(
        self,
        group_name: str,
        consume_type: ConsumeType,
        message_model: MessageModel,
        consume_from_where: ConsumeFromWhere,
        *,
        clock_ms: Callable[[], int] = _monotonic_ms,
    ) -> None:
        self.group_name = group_name
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self._clock_ms = clock_ms
        #: Channel -> ClientChannelInfo, in registration order.
        self.channels: dict[Channel, ClientChannelInfo] = {}
        #: topic -> SubscriptionData
        self.subscription_table: dict[str, SubscriptionData] = {}
        self.last_update_ms = clock_ms()

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        for info in list(self.channels.values()):
            if info.client_id == client_id:
                return info
        return None

    def find_subscription_data(self, topic: str) -> SubscriptionData | None:
        return self.subscription_table.get(topic)

    def get_all_channels(self) -> list[Channel]:
        return list(self.channels)

    def get_all_client_ids(self) -> list[str]:
        """``getAllClientId``: one id per channel, in the table's order."""
        return [info.client_id for info in list(self.channels.values())]

    def subscribe_topics(self) -> set[str]:
        return set(self.subscription_table)

    def update_channel(
        self,
        info_new: ClientChannelInfo,
        consume_type: ConsumeType,
        message_model: MessageModel,
        consume_from_where: ConsumeFromWhere,
    ) -> bool:
        """``updateChannel``: True when the channel is new to the group."""
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        updated = False
        info_old = self.channels.get(info_new.channel)
        if info_old is None:
            self.channels[info_new.channel] = info_new
            log.info("new consumer connected, group %s %s %s", self.group_name, message_model, info_new)
            updated = True
            info_old = info_new
        elif info_old.client_id != info_new.client_id:
            # Java replaces the info (a client restarted with a new id on the same channel)
            log.error(
                "consumer channel exists with another client id, group %s: %s -> %s",
                self.group_name,
                info_old,
                info_new,
            )
            self.channels[info_new.channel] = info_new
            info_old = info_new
        now = self._clock_ms()
        self.last_update_ms = now
        info_old.last_update_ms = now
        return updated

    def update_subscription(self, sub_list: Iterable[SubscriptionData]) -> bool:
        """``updateSubscription``: True when a topic was added or removed (not on a newer subVersion)."""
        updated = False
        subs = list(sub_list)
        for sub in subs:
            topic = sub.topic or ""
            old = self.subscription_table.get(topic)
            if old is None:
                self.subscription_table[topic] = sub
                updated = True
                log.info("subscription changed, group %s add %s", self.group_name, sub)
            elif sub.sub_version > old.sub_version:
                self.subscription_table[topic] = sub
        wanted = {sub.topic or "" for sub in subs}
        for topic in list(self.subscription_table):
            if topic not in wanted:
                log.warning("subscription changed, group %s remove topic %s", self.group_name, topic)
                del self.subscription_table[topic]
                updated = True
        self.last_update_ms = self._clock_ms()
        return updated

    def unregister_channel(self, channel: Channel) -> bool:
        return self.channels.pop(channel, None) is not None

    def __repr__(self) -> str:
        return f"<ConsumerGroupInfo {self.group_name} clients={self.get_all_client_ids()}>"


class ConsumerManager:
    """Consumer groups by name (``ConsumerManager``)."""

    def __init__(
        self,
        listener: ConsumerIdsChangeListener | None = None,
        *,
        clock_ms: Callable[[], int] = _monotonic_ms,
        channel_expired_timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS,
    ) -> None:
        self._listener = listener
        self._clock_ms = clock_ms
        self._expiry_ms = channel_expired_timeout_ms
        self._lock = threading.RLock()
        self.consumer_table: dict[str, ConsumerGroupInfo] = {}

    def _fire(self, event: ConsumerGroupEvent, group: str, channels: list[Channel]) -> None:
        if self._listener is None:
            return
        try:
            self._listener(event, group, channels)
        except Exception:
            log.exception("consumer ids change listener failed for %s %s", event.name, group)

    def get_consumer_group_info(self, group: str) -> ConsumerGroupInfo | None:
        return self.consumer_table.get(group)

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        info = self.consumer_table.get(group)
        return None if info is None else info.find_channel(client_id)

    def find_subscription_data(self, group: str, topic: str) -> SubscriptionData | None:
        info = self.consumer_table.get(group)
        return None if info is None else info.find_subscription_data(topic)

    def register_consumer(
        self,
        group: str,
        client: ClientChannelInfo,
        consume_type: ConsumeType,
        message_model: MessageModel,
        consume_from_where: ConsumeFromWhere,
        sub_list: Iterable[SubscriptionData],
        notify: bool,
    ) -> bool:
        """``registerConsumer``: True if the group's channels or topics changed (then CHANGE fires
        when ``notify``, i.e. the group's ``notifyConsumerIdsChangedEnable``)."""
        with self._lock:
            info = self.consumer_table.get(group)
            if info is None:
                info = ConsumerGroupInfo(
                    group, consume_type, message_model, consume_from_where, clock_ms=self._clock_ms
                )
                self.consumer_table[group] = info
            r1 = info.update_channel(client, consume_type, message_model, consume_from_where)
            r2 = info.update_subscription(sub_list)
            channels = info.get_all_channels()
        if (r1 or r2) and notify:
            self._fire(ConsumerGroupEvent.CHANGE, group, channels)
        self._fire(ConsumerGroupEvent.REGISTER, group, [])
        return r1 or r2

    def unregister_consumer(self, group: str, channel: Channel, notify: bool) -> None:
        """``unregisterConsumer``: remove the channel; notify the rest of the group."""
        with self._lock:
            info = self.consumer_table.get(group)
            if info is None:
                return
            info.unregister_channel(channel)
            emptied = not info.channels and self.consumer_table.pop(group, None) is not None
            channels = info.get_all_channels()
        if emptied:
            self._fire(ConsumerGroupEvent.UNREGISTER, group, [])
        if notify:
            self._fire(ConsumerGroupEvent.CHANGE, group, channels)

    def do_channel_close_event(self, remote_addr: str, channel: Channel) -> None:
        """``doChannelCloseEvent``: drop ``channel`` from every group, notifying the others."""
        events: list[tuple[str, bool, list[Channel]]] = []
        with self._lock:
            for group, info in list(self.consumer_table.items()):
                if not info.unregister_channel(channel):
                    continue
                log.info("consumer channel %s closed, removed from group %s", remote_addr, group)
                emptied = not info.channels and self.consumer_table.pop(group, None) is not None
                events.append((group, emptied, info.get_all_channels()))
        for group, emptied, channels in events:
            if emptied:
                self._fire(ConsumerGroupEvent.UNREGISTER, group, [])
            self._fire(ConsumerGroupEvent.CHANGE, group, channels)

    def scan_not_active_channel(self) -> list[Channel]:
        """``scanNotActiveChannel``: remove and close channels idle for over 120 s.

        Returns the channels closed. The rest of each affected group is notified (the Java
        broker notifies through the channel-close event of the closed channel).
        """
        now = self._clock_ms()
        expired: list[Channel] = []
        with self._lock:
            for info in list(self.consumer_table.values()):
                for ch, cci in list(info.channels.items()):
                    if now - cci.last_update_ms > self._expiry_ms:
                        expired.append(ch)
        for ch in dict.fromkeys(expired):
            log.warning("SCAN: remove expired consumer channel %s", ch.remote_addr)
            self.do_channel_close_event(ch.remote_addr, ch)
            ch.close()
        return expired

    def query_topic_consume_by_who(self, topic: str) -> set[str]:
        """``queryTopicConsumeByWho``: groups with a live subscription to ``topic``."""
        with self._lock:
            return {g for g, info in self.consumer_table.items() if topic in info.subscription_table}


class ProducerManager:
    """Producer groups by name (``ProducerManager``)."""

    def __init__(
        self,
        *,
        clock_ms: Callable[[], int] = _monotonic_ms,
        channel_expired_timeout_ms: int = CHANNEL_EXPIRED_TIMEOUT_MS,
    ) -> None:
        self._clock_ms = clock_ms
        self._expiry_ms = channel_expired_timeout_ms
        self._lock = threading.RLock()
        self.group_channel_table: dict[str, dict[Channel, ClientChannelInfo]] = {}
        self._client_channel_table: dict[str, Channel] = {}

    def register_producer(self, group: str, client: ClientChannelInfo) -> None:
        """``registerProducer``: add the channel or refresh its timestamp."""
        with self._lock:
            table = self.group_channel_table.setdefault(group, {})
            found = table.get(client.channel)
            if found is None:
                client.last_update_ms = self._clock_ms()
                table[client.channel] = client
                self._client_channel_table[client.client_id] = client.channel
                log.info("new producer connected, group %s %s", group, client)
            else:
                found.last_update_ms = self._clock_ms()

    def unregister_producer(self, group: str, client: ClientChannelInfo) -> None:
        """``unregisterProducer``."""
        with self._lock:
            table = self.group_channel_table.get(group)
            if not table:
                return
            table.pop(client.channel, None)
            self._client_channel_table.pop(client.client_id, None)
            if not table:
                del self.group_channel_table[group]

    def do_channel_close_event(self, remote_addr: str, channel: Channel) -> None:
        with self._lock:
            for group, table in list(self.group_channel_table.items()):
                info = table.pop(channel, None)
                if info is not None:
                    self._client_channel_table.pop(info.client_id, None)
                    log.info("producer channel %s closed, removed from group %s", remote_addr, group)
                # Java keeps the (possibly empty) group map; rocketq drops empty groups.
                if not table:
                    del self.group_channel_table[group]

    def scan_not_active_channel(self) -> list[Channel]:
        """Remove and close producer channels idle for over 120 s."""
        now = self._clock_ms()
        expired: list[Channel] = []
        with self._lock:
            for group, table in list(self.group_channel_table.items()):
                for ch, info in list(table.items()):
                    if now - info.last_update_ms > self._expiry_ms:
                        del table[ch]
                        self._client_channel_table.pop(info.client_id, None)
                        expired.append(ch)
                        log.warning("SCAN: remove expired producer channel %s of %s", ch.remote_addr, group)
                if not table:
                    del self.group_channel_table[group]
        for ch in dict.fromkeys(expired):
            ch.close()
        return expired

    def get_group_channels(self, group: str) -> list[ClientChannelInfo]:
        with self._lock:
            return list(self.group_channel_table.get(group, {}).values())

    def find_channel(self, client_id: str) -> Channel | None:
        return self._client_channel_table.get(client_id)

    def get_available_channel(self, group: str) -> Channel | None:
        """A live channel of ``group`` (``getAvailableChannel``, for transaction checks)."""
        with self._lock:
            for ch in self.group_channel_table.get(group, {}):
                if not ch.closed:
                    return ch
        return None
