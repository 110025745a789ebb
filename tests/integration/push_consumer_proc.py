"""A push consumer in its own process, for tests that SIGKILL it mid-stream.

usage: python push_consumer_proc.py NAMESRV TOPIC GROUP OUTFILE [SLEEP_MS]

Every consumed message body is appended to OUTFILE (one line each, flushed and fsynced
before the listener returns), so what the process acknowledged survives a SIGKILL.
"""

from __future__ import annotations

import os
import sys
import time

from rocketq.client.consumer.listener import ConsumeConcurrentlyContext, ConsumeConcurrentlyStatus
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.protocol.heartbeat import ConsumeFromWhere
from rocketq.protocol.message import MessageExt


def main() -> int:
    namesrv, topic, group, outfile = sys.argv[1:5]
    sleep_s = int(sys.argv[5]) / 1000.0 if len(sys.argv) > 5 else 0.0
    out = open(outfile, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the process life

    def listener(msgs: list[MessageExt], ctx: ConsumeConcurrentlyContext) -> ConsumeConcurrentlyStatus:
        if sleep_s:
            time.sleep(sleep_s)
        for msg in msgs:
            out.write(msg.body.decode() + "\n")
        out.flush()
        os.fsync(out.fileno())
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        config=PushConsumerConfig(
            consumer_group=group,
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            consume_thread_max=4,
            consume_thread_min=4,
        ),
        namesrv_addr=namesrv,
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    consumer.start()
    print("started", flush=True)
    try:
        while True:
            time.sleep(0.2)
    except KeyboardInterrupt:
        consumer.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
