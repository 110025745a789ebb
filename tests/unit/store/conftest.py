"""Fixtures for the message-store tests: tiny files, an injected clock and disk usage."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.broker.store import MessageExtBrokerInner, MessageStore, MessageStoreConfig

BORN = ("127.0.0.1", 52950)
STORE_HOST = ("127.0.0.1", 10911)
T0 = 1_795_308_000_000  # a store-clock start (Nov 2026, like the golden captures)

# Tiny sizes: 64 KiB commit-log segments, 100-unit consume-queue files, small index files.
TINY: dict[str, Any] = {
    "mapped_file_size_commit_log": 64 * 1024,
    "mapped_file_size_consume_queue": 100 * 20,
    "max_hash_slot_num": 64,
    "max_index_num": 256,
    "flush_interval_commit_log_ms": 20,
    "flush_interval_consume_queue_ms": 20,
}


class FakeClock:
    """A settable store clock (ms); ``step`` is added after every read."""

    def __init__(self, now: int = T0, step: int = 1) -> None:
        self.now = now
        self.step = step

    def __call__(self) -> int:
        value = self.now
        self.now += self.step
        return value


class FakeDisk:
    """Injected disk usage (fraction of the partition used)."""

    def __init__(self, usage: float = 0.1) -> None:
        self.usage = usage

    def __call__(self, path: str) -> float:
        return self.usage


def make_msg(
    topic: str = "TopicA",
    queue_id: int = 0,
    body: bytes = b"hello",
    *,
    tags: str | None = None,
    keys: str | None = None,
    uniq: str | None = None,
    extra: dict[str, str] | None = None,
    **props: str,
) -> MessageExtBrokerInner:
    properties = {**props, **(extra or {})}
    if tags is not None:
        properties["TAGS"] = tags
    if keys is not None:
        properties["KEYS"] = keys
    if uniq is not None:
        properties["UNIQ_KEY"] = uniq
    return MessageExtBrokerInner(
        topic=topic,
        queue_id=queue_id,
        body=body,
        born_host=BORN,
        store_host=STORE_HOST,
        born_timestamp=T0 - 5,
        properties=properties,
    )


class StoreFactory:
    """Builds started stores on one root folder; shuts them all down at teardown."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.clock = FakeClock()
        self.disk = FakeDisk()
        self.stores: list[MessageStore] = []

    def config(self, root: Path | None = None, **overrides: Any) -> MessageStoreConfig:
        return MessageStoreConfig(store_path_root_dir=str(root or self.root), **{**TINY, **overrides})

    def __call__(self, *, start: bool = True, root: Path | None = None, **overrides: Any) -> MessageStore:
        store = MessageStore(self.config(root, **overrides), clock_ms=self.clock, disk_usage=self.disk)
        assert store.load()
        if start:
            store.start()
        self.stores.append(store)
        return store

    def crash(self, store: MessageStore) -> None:
        """Simulate kill -9: stop the threads and unmap, but write no checkpoint and leave
        the abort file (the mapped pages are in the page cache, as after a process crash)."""
        store.commit_log.close_for_writing()
        for service in store._services:
            service.shutdown()
        store._services = []
        store._running = False
        store.commit_log.close()
        for cq in store.consume_queue_table.values():
            cq.close()
        store.index_service.close()
        if store.checkpoint is not None:
            store.checkpoint.close()
            store.checkpoint = None
        store._loaded = False
        self.stores.remove(store)


@pytest.fixture
def factory(tmp_path: Path) -> Iterator[StoreFactory]:
    f = StoreFactory(tmp_path / "store")
    yield f
    for store in f.stores:
        store.shutdown()
    # shutdown() joins every store thread
    names = {"FlushRealTimeService", "GroupCommitService", "FlushConsumeQueueService", "CleanResourceService"}
    assert not [t.name for t in threading.enumerate() if t.name in names]


@pytest.fixture
def store(factory: StoreFactory) -> MessageStore:
    return factory()


PutFn = Callable[..., Any]
