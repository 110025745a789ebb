"""An orderly push consumer in its own process, for the wallet test that SIGKILLs it.

usage: python orderly_consumer_proc.py NAMESRV TOPIC GROUP OUTFILE SLEEP_MS

Each delivery is appended to OUTFILE as ``user seq consumer queue t_start t_end`` (one line
per message, fsynced before the listener returns). Stops cleanly on SIGTERM/SIGINT.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from rocketq.client.config import ClientConfig
from rocketq.client.consumer.listener import ConsumeOrderlyContext, ConsumeOrderlyStatus
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.protocol.heartbeat import ConsumeFromWhere
from rocketq.protocol.message import MessageExt


def main() -> int:
    namesrv, topic, group, outfile, sleep_ms = sys.argv[1:6]
    name = f"proc{os.getpid()}"
    out = open(outfile, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the process life
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], ctx: ConsumeOrderlyContext) -> ConsumeOrderlyStatus:
        t0 = time.time()
        time.sleep(int(sleep_ms) / 1000.0)
        t1 = time.time()
        with lock:
            for m in msgs:
                user, seq = m.body.decode().split(":")[:2]
                out.write(f"{user} {seq} {name} {ctx.message_queue.queue_id} {t0:.6f} {t1:.6f}\n")
            out.flush()
            os.fsync(out.fileno())
        return ConsumeOrderlyStatus.SUCCESS

    consumer = PushConsumer(
        config=PushConsumerConfig(
            consumer_group=group,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            lock_interval_ms=1000,
            lock_max_live_time_ms=3000,
        ),
        namesrv_addr=namesrv,
        client_config=ClientConfig(poll_name_server_interval_ms=1000, rebalance_interval_ms=1000),
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener_orderly(listener)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    consumer.start()
    print("started", flush=True)
    stop.wait()
    consumer.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
