"""Offset stores of the asyncio consumers.

:class:`AsyncRemoteOffsetStore` mirrors ``RemoteBrokerOffsetStore`` (CLUSTERING) over awaitable
RPCs; its in-memory rules are the blocking store's own :class:`~rocketq.client.consumer.offset_store.OffsetTable`.
:class:`AsyncLocalOffsetStore` wraps the blocking :class:`~rocketq.client.consumer.offset_store.LocalFileOffsetStore`
(BROADCASTING): it only touches a small local file, never the network.

Rules (as the blocking stores): ``read_offset`` answers from memory first unless
READ_FROM_STORE; -1 = no offset anywhere, -2 = the broker could not be asked;
``persist_all(mqs)`` sends the offsets of ``mqs`` (oneway) and forgets every other queue's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Protocol

from rocketq.aio.instance import AsyncClientInstance
from rocketq.client.consumer.offset_store import LocalFileOffsetStore, OffsetTable, ReadOffsetType
from rocketq.errors import BrokerError, RocketqError
from rocketq.protocol.message_queue import MessageQueue

__all__ = ["AsyncLocalOffsetStore", "AsyncOffsetStore", "AsyncRemoteOffsetStore"]

log = logging.getLogger(__name__)


class AsyncOffsetStore(Protocol):
    """``OffsetStore`` with awaitable reads and writes."""

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None: ...

    async def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int: ...

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None: ...

    async def persist(self, mq: MessageQueue) -> None: ...

    def remove_offset(self, mq: MessageQueue) -> None: ...

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]: ...

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool) -> None: ...


class AsyncRemoteOffsetStore:
    """``RemoteBrokerOffsetStore`` on the event loop (CLUSTERING)."""

    def __init__(self, instance: AsyncClientInstance, group: str) -> None:
        self._instance = instance
        self.group = group
        self._table = OffsetTable()

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        self._table.update(mq, offset, increase_only)

    async def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int:
        if read_type is not ReadOffsetType.READ_FROM_STORE:
            offset = self._table.get(mq)
            if offset is not None:
                return offset
            if read_type is ReadOffsetType.READ_FROM_MEMORY:
                return -1
        inst = self._instance
        try:
            addr = await inst.master_of(mq)
            offset = await inst.api.query_consumer_offset(
                addr, self.group, mq, inst.config.mq_client_api_timeout_ms
            )
        except BrokerError as exc:
            log.debug("no broker offset for %s/%s: %s", self.group, mq, exc)
            return -1
        except RocketqError as exc:
            log.warning("fetch consume offset of %s/%s failed: %s", self.group, mq, exc)
            return -2
        self._table.update(mq, offset, False)
        return offset

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool) -> None:
        inst = self._instance
        addr = await inst.master_of(mq)
        await inst.api.update_consumer_offset(
            addr, self.group, mq, offset, inst.config.mq_client_api_timeout_ms, oneway=oneway
        )

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        wanted = set(mqs)
        for mq, offset in self._table.snapshot().items():
            if mq in wanted:
                await self._send(mq, offset)
            else:
                self._table.remove(mq)

    async def persist(self, mq: MessageQueue) -> None:
        offset = self._table.get(mq)
        if offset is not None:
            await self._send(mq, offset)

    async def _send(self, mq: MessageQueue, offset: int) -> None:
        try:
            await self.update_consume_offset_to_broker(mq, offset, True)
        except RocketqError as exc:
            log.warning("persist offset %d of %s/%s failed: %s", offset, self.group, mq, exc)

    def remove_offset(self, mq: MessageQueue) -> None:
        self._table.remove(mq)

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]:
        return self._table.snapshot(topic)


class AsyncLocalOffsetStore:
    """``LocalFileOffsetStore`` behind the async interface (BROADCASTING; local file only)."""

    def __init__(self, store: LocalFileOffsetStore) -> None:
        self._store = store
        store.load()

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        self._store.update_offset(mq, offset, increase_only)

    async def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int:
        return self._store.read_offset(mq, read_type)

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        self._store.persist_all(mqs)

    async def persist(self, mq: MessageQueue) -> None:
        self._store.persist(mq)

    def remove_offset(self, mq: MessageQueue) -> None:
        self._store.remove_offset(mq)

    def clone_offset_table(self, topic: str | None = None) -> dict[MessageQueue, int]:
        return self._store.clone_offset_table(topic)

    async def update_consume_offset_to_broker(self, mq: MessageQueue, offset: int, oneway: bool) -> None:
        self._store.update_consume_offset_to_broker(mq, offset, oneway)
