"""Message-store throughput: appends/s and get_message drain rate.

Usage: ``.venv/bin/python benchmarks/store_bench.py [--messages N] [--threads T]``

* appends of single 100-byte messages (TAGS + UNIQ_KEY properties, as a Java producer
  sends them) with ASYNC_FLUSH and SYNC_FLUSH (group commit), from 1 and from T threads
  (default 32), each SYNC put waiting for its flush future;
* batches of 32 via ``put_messages``;
* ``get_message`` draining N (default 200 000) messages of one queue, 32 per call, plus
  the same with a tag filter that keeps half of them.
Store files go to a temporary folder (128 MiB commit-log segments).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from collections.abc import Callable

from rocketq.broker.store import GetMessageStatus, MessageExtBrokerInner, MessageStore, MessageStoreConfig
from rocketq.protocol.java import string_hash

BORN = ("127.0.0.1", 52950)
STORE_HOST = ("127.0.0.1", 10911)
BODY = b"x" * 100


def _msg(i: int, queue_id: int = 0) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(
        topic="BenchTopic",
        queue_id=queue_id,
        body=BODY,
        born_host=BORN,
        store_host=STORE_HOST,
        born_timestamp=1,
        properties_string=f"TAGS\x01{'TagA' if i % 2 else 'TagB'}\x02UNIQ_KEY\x017F0000010001{i:020X}",
    )


def _store(root: str, flush: str) -> MessageStore:
    config = MessageStoreConfig(
        store_path_root_dir=root,
        mapped_file_size_commit_log=128 * 1024 * 1024,
        flush_disk_type=flush,
    )
    store = MessageStore(config)
    assert store.load()
    store.start()
    return store


def _run_threads(threads: int, per_thread: int, work: Callable[[int, int], None]) -> float:
    barrier = threading.Barrier(threads + 1)

    def body(t: int) -> None:
        barrier.wait()
        for i in range(per_thread):
            work(t, i)

    ts = [threading.Thread(target=body, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in ts:
        t.join()
    return time.perf_counter() - start


def bench_puts(flush: str, threads: int, total: int) -> float:
    root = tempfile.mkdtemp(prefix="rocketq-bench-")
    store = _store(root, flush)
    try:
        per_thread = total // threads

        def work(t: int, i: int) -> None:
            r = store.put_message(_msg(t * per_thread + i, queue_id=t % 8))
            assert r.ok
            if r.flush_future is not None:
                assert r.flush_future.result(10)

        elapsed = _run_threads(threads, per_thread, work)
        return per_thread * threads / elapsed
    finally:
        store.shutdown()
        shutil.rmtree(root, ignore_errors=True)


def bench_batches(total: int) -> float:
    root = tempfile.mkdtemp(prefix="rocketq-bench-")
    store = _store(root, "ASYNC_FLUSH")
    try:
        batches = total // 32
        start = time.perf_counter()
        for b in range(batches):
            assert store.put_messages([_msg(b * 32 + i) for i in range(32)]).ok
        return batches * 32 / (time.perf_counter() - start)
    finally:
        store.shutdown()
        shutil.rmtree(root, ignore_errors=True)


def bench_drain(total: int) -> tuple[float, float, float]:
    root = tempfile.mkdtemp(prefix="rocketq-bench-")
    store = _store(root, "ASYNC_FLUSH")
    try:
        for b in range(total // 32):
            assert store.put_messages([_msg(b * 32 + i) for i in range(32)]).ok
        results = []
        tag_a = string_hash("TagA")

        def only_tag_a(code: int) -> bool:
            return code == tag_a

        for message_filter in (None, only_tag_a):
            offset = 0
            count = 0
            size = 0
            start = time.perf_counter()
            while True:
                got = store.get_message("g", "BenchTopic", 0, offset, 32, message_filter)
                if got.status is not GetMessageStatus.FOUND:
                    break
                count += got.message_count
                size += len(got.body())  # what the pull response would send
                offset = got.next_begin_offset
            elapsed = time.perf_counter() - start
            expected = total if message_filter is None else total // 2
            assert count == expected, (count, expected)
            results.append(count / elapsed)
            if message_filter is None:
                results.append(size / elapsed / 1e6)
        return results[0], results[1], results[2]
    finally:
        store.shutdown()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--threads", type=int, default=32)
    args = parser.parse_args()
    n = args.messages
    t = args.threads
    print(f"appends, ASYNC_FLUSH, 1 thread      : {bench_puts('ASYNC_FLUSH', 1, n // 4):>10,.0f} msg/s")
    print(f"appends, ASYNC_FLUSH, {t} threads    : {bench_puts('ASYNC_FLUSH', t, n // 4):>10,.0f} msg/s")
    print(f"appends, SYNC_FLUSH, 1 thread       : {bench_puts('SYNC_FLUSH', 1, n // 40):>10,.0f} msg/s")
    print(f"appends, SYNC_FLUSH, {t} threads     : {bench_puts('SYNC_FLUSH', t, n // 4):>10,.0f} msg/s")
    print(f"put_messages, batches of 32         : {bench_batches(n // 4):>10,.0f} msg/s")
    rate, mb, filtered = bench_drain(n)
    print(f"get_message drain of {n:,}      : {rate:>10,.0f} msg/s ({mb:.0f} MB/s of pull bodies)")
    print(f"get_message drain, tag filter (1/2) : {filtered:>10,.0f} msg/s returned")


if __name__ == "__main__":
    main()
