"""Take the README's dashboard screenshots: a 2-broker embedded cluster (trace topic on) with
traffic, a slow (lagging) group and a traced group with a dead letter, then each main page in Debian's
headless Chromium (the browser tests' harness, tests/dashboard/harness.py).

    .venv/bin/python docs/screenshots/make_screenshots.py      # writes docs/screenshots/*.png
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from tests.dashboard.harness import FAST, DashboardProcess, Traffic, browser_missing_reason, launch_browser  # noqa: E402

from rocketq.client.consumer.listener import ConsumeConcurrentlyStatus  # noqa: E402
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig  # noqa: E402
from rocketq.client.producer import Producer  # noqa: E402
from rocketq.protocol.heartbeat import ConsumeFromWhere  # noqa: E402
from rocketq.protocol.message import Message, MessageExt  # noqa: E402
from rocketq.testing.cluster import EmbeddedCluster  # noqa: E402
from rocketq.testing.waits import wait_until  # noqa: E402


def main() -> int:
    missing = browser_missing_reason()
    if missing:
        print(missing, file=sys.stderr)
        return 1
    with EmbeddedCluster(brokers=2, broker_conf={"traceTopicEnable": "true"}) as cluster:
        for topic in ("orders", "payments"):
            cluster.create_topic(topic, 4)
            cluster.wait_route(topic)
        traffic = Traffic(cluster.namesrv_addr, "orders", "order-service", interval_s=0.02)
        producer = Producer(
            "payment-service", namesrv_addr=cluster.namesrv_addr, client_config=FAST, enable_msg_trace=True
        )
        producer.start()
        for i in range(40):
            producer.send(
                Message(
                    "payments",
                    f'{{"payment": {i}, "amount": {10 + i}}}'.encode(),
                    tags="paid",
                    keys=f"pay-{i}",
                )
            )
        failing = threading.Event()
        failing.set()

        def slow(msgs: list[MessageExt], _ctx: Any) -> ConsumeConcurrentlyStatus:
            time.sleep(0.05)
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        def flaky(msgs: list[MessageExt], _ctx: Any) -> ConsumeConcurrentlyStatus:
            if failing.is_set() and any(m.keys == ["pay-7"] for m in msgs):
                return ConsumeConcurrentlyStatus.RECONSUME_LATER
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumers = []
        for group, topic, listener, extra, traced in (
            ("order-audit", "orders", slow, {}, False),
            ("billing", "payments", flaky, {"max_reconsume_times": 0}, True),
        ):
            c = PushConsumer(
                config=PushConsumerConfig(
                    consumer_group=group,
                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                    **extra,
                ),
                namesrv_addr=cluster.namesrv_addr,
                client_config=FAST,
                enable_msg_trace=traced,
            )
            c.subscribe(topic, "*")
            c.register_message_listener(listener)
            c.start()
            consumers.append(c)
        dash = DashboardProcess(cluster.namesrv_addr, cluster.store_dir)
        try:
            time.sleep(12)  # let the TPS windows and the charts fill
            with launch_browser((1400, 900)) as ctx:
                page = ctx.new_page()
                dlq_id = ""

                def shot(path: str, name: str, wait: float = 0.0) -> None:
                    page.goto(dash.url + path)
                    if wait:
                        page.wait_for_timeout(wait * 1000)
                    page.screenshot(path=str(HERE / f"{name}.png"), full_page=False)
                    print("wrote", name)

                shot("/cluster", "cluster", 9)
                shot("/topics", "topics")
                shot("/topic/payments", "topic")
                shot("/groups", "groups")
                shot("/group/order-audit", "group", 9)
                shot("/messages?mode=key&topic=payments&key=pay-12", "messages")
                page.goto(dash.url + "/messages?mode=key&topic=payments&key=pay-12")
                page.locator("#results tbody a").first.click()
                page.wait_for_load_state()
                page.screenshot(path=str(HERE / "message.png"))
                page.locator("#trace-link").click()
                page.wait_for_load_state()
                page.screenshot(path=str(HERE / "trace.png"))

                def dlq_ready() -> bool:
                    page.goto(dash.url + "/dlq?group=billing")
                    return page.locator("#dlq tbody tr td form").count() > 0

                wait_until(dlq_ready, 60, "a dead letter", interval_s=1)
                dlq_id = page.locator("#dlq tbody tr a").first.inner_text()
                page.screenshot(path=str(HERE / "dlq.png"))
                print("dead letter", dlq_id)
        finally:
            dash.stop()
            for c in consumers:
                c.shutdown()
            producer.shutdown()
            traffic.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
