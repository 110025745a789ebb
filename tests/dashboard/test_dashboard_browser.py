"""The web dashboard in a real headless Chromium (Debian's, driven by Playwright) against a
2-broker embedded cluster with traffic flowing (issue #26).

Each test drives the pages as an operator would and checks what the cluster did: a topic
created through the form exists on both brokers, a group's lag shown live falls to 0 as a
consumer drains it, a message is found by key, a dead letter resent from the DLQ page is
consumed again, an offset reset from the group page moves the group's offsets, and a
message sent and consumed with message trace on shows its send and its consuming group on
the trace page.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from rocketq.admin import Admin
from rocketq.client.consumer.listener import ConsumeConcurrentlyStatus
from rocketq.client.consumer.push import PushConsumer, PushConsumerConfig
from rocketq.client.producer import Producer
from rocketq.protocol.heartbeat import ConsumeFromWhere
from rocketq.protocol.message import Message, MessageExt
from rocketq.testing.cluster import EmbeddedCluster
from rocketq.testing.waits import wait_until
from tests.dashboard.harness import FAST, DashboardProcess, Traffic, browser_test_marks, launch_browser

pytest.importorskip("starlette", reason="rocketq[dashboard] (in dev) is not installed")

pytestmark = browser_test_marks()

TRAFFIC_TOPIC = "dash_traffic"


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    # traceTopicEnable: each broker creates RMQ_SYS_TRACE_TOPIC, for the trace page
    with EmbeddedCluster(brokers=2, broker_conf={"traceTopicEnable": "true"}) as c:
        c.create_topic(TRAFFIC_TOPIC, 4)
        c.wait_route(TRAFFIC_TOPIC)
        yield c


@pytest.fixture(scope="module")
def traffic(cluster: EmbeddedCluster) -> Iterator[Traffic]:
    t = Traffic(cluster.namesrv_addr, TRAFFIC_TOPIC, "dash_traffic_pg")
    yield t
    t.stop()


@pytest.fixture(scope="module")
def dashboard(cluster: EmbeddedCluster, traffic: Traffic) -> Iterator[str]:
    proc = DashboardProcess(cluster.namesrv_addr, cluster.store_dir)
    yield proc.url
    proc.stop()


@pytest.fixture(scope="module")
def browser(dashboard: str) -> Iterator[Any]:
    with launch_browser() as ctx:
        yield ctx


@pytest.fixture
def page(browser: Any, dashboard: str) -> Iterator[Any]:
    pg = browser.new_page()
    pg.set_default_timeout(20_000)
    yield pg
    pg.close()


@pytest.fixture(scope="module")
def admin(cluster: EmbeddedCluster) -> Iterator[Admin]:
    with Admin(cluster.namesrv_addr) as a:
        yield a


def _consumer(
    cluster: EmbeddedCluster,
    group: str,
    topic: str,
    listener: Callable[[list[MessageExt], Any], ConsumeConcurrentlyStatus],
    *,
    enable_msg_trace: bool = False,
    **cfg: Any,
) -> PushConsumer:
    consumer = PushConsumer(
        config=PushConsumerConfig(
            consumer_group=group, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **cfg
        ),
        namesrv_addr=cluster.namesrv_addr,
        client_config=FAST,
        enable_msg_trace=enable_msg_trace,
    )
    consumer.subscribe(topic, "*")
    consumer.register_message_listener(listener)
    consumer.start()
    return consumer


def _topic(cluster: EmbeddedCluster, name: str) -> str:
    cluster.create_topic(name, 2)
    cluster.wait_route(name)
    return name


def _send(cluster: EmbeddedCluster, topic: str, n: int, prefix: str) -> None:
    p = Producer(f"{prefix}_pg", namesrv_addr=cluster.namesrv_addr, client_config=FAST)
    p.start()
    try:
        for i in range(n):
            p.send(Message(topic, f"{prefix}-{i}".encode(), keys=f"{prefix}-{i}"))
    finally:
        p.shutdown()


def _go(page: Any, selector: str) -> None:
    """Click something that navigates and wait for the new page to load."""
    with page.expect_navigation():
        page.click(selector)


def _no_error(page: Any) -> None:
    assert page.locator(".flash.err").count() == 0, page.locator(".flash.err").first.inner_text()


def test_every_page_opens_and_the_cluster_shows_both_brokers(
    page: Any, dashboard: str, cluster: EmbeddedCluster, traffic: Traffic
) -> None:
    wait_until(lambda: traffic.sent > 20, 20, "traffic flowing")
    page.goto(f"{dashboard}/cluster")
    rows = page.locator("#brokers tbody tr")
    assert rows.count() == 2
    text = page.locator("#brokers").inner_text()
    assert "broker-a" in text and "broker-b" in text
    for addr in cluster.broker_addrs:
        assert addr in text
    # the live chart polls /api/overview and writes the merged TPS of both brokers
    page.wait_for_function("document.querySelector('canvas.chart').dataset.updates >= 2")
    page.wait_for_function("parseFloat(document.getElementById('in-tps').textContent) > 0", timeout=30_000)

    _go(page, "#brokers tbody tr:first-child a")
    assert page.locator("#runtime").inner_text().count("msgPutTotalTodayNow") == 1
    assert "brokerName" in page.locator("#config").inner_text()

    for category in ("", "normal", "retry", "dlq", "system"):
        page.goto(f"{dashboard}/topics" + (f"?category={category}" if category else ""))
        _no_error(page)
    page.goto(f"{dashboard}/topics?category=system")
    assert "TBW102" in page.locator("#topics").inner_text()
    assert TRAFFIC_TOPIC not in page.locator("#topics").inner_text()

    page.goto(f"{dashboard}/topic/{TRAFFIC_TOPIC}")
    _no_error(page)
    status = page.locator("#status").inner_text()
    assert "broker-a" in status and "broker-b" in status  # merged over both brokers
    page.goto(f"{dashboard}/producers?topic={TRAFFIC_TOPIC}&group=dash_traffic_pg")
    _no_error(page)
    assert page.locator("#producers tbody tr").count() >= 1
    assert "PYTHON" in page.locator("#producers").inner_text()
    for path in ("/groups", "/messages", "/dlq", "/trace"):
        page.goto(dashboard + path)
        _no_error(page)
        assert page.locator("h1").count() == 1


def test_create_a_topic_and_send_a_test_message(page: Any, dashboard: str, admin: Admin) -> None:
    topic = "dash_created_topic"
    page.goto(f"{dashboard}/topics")
    page.click("#create-topic summary")
    page.fill("#create-topic input[name=topic]", topic)
    page.fill("#create-topic input[name=read_queue_nums]", "3")
    page.fill("#create-topic input[name=write_queue_nums]", "3")
    _go(page, "#create-topic button[type=submit]")
    assert "saved on" in page.locator(".flash.ok").inner_text()
    # on both masters
    assert sorted(name for name, _ in admin.topic_brokers(topic)) == ["broker-a", "broker-b"]
    page.goto(f"{dashboard}/topic/{topic}")
    assert page.locator("#status tbody tr").count() == 6

    page.fill("#send-form textarea[name=body]", "hello dashboard")
    page.fill("#send-form input[name=keys]", "dash-test-key")
    _go(page, "#send-form button[type=submit]")
    assert page.locator(".flash.ok").inner_text().startswith("SEND_OK")
    assert page.locator("#total-messages").inner_text() == "1"

    # update: 2 queues per broker
    page.fill("#update-form input[name=read_queue_nums]", "2")
    page.fill("#update-form input[name=write_queue_nums]", "2")
    _go(page, "#update-form button[type=submit]")
    assert "saved on" in page.locator(".flash.ok").inner_text()
    assert page.locator("#status tbody tr").count() == 4
    # delete (the page asks for a confirmation first)
    page.once("dialog", lambda dialog: dialog.accept())
    _go(page, "#delete-form button[type=submit]")
    assert page.locator(".flash.ok").inner_text() == f"topic {topic} deleted"
    assert topic not in admin.topic_list()


def test_create_and_delete_a_group(page: Any, dashboard: str, admin: Admin) -> None:
    group = "dash_created_group"
    page.goto(f"{dashboard}/groups")
    page.click("#create-group summary")
    page.fill("#create-group input[name=group]", group)
    page.fill("#create-group input[name=retry_max_times]", "4")
    _go(page, "#create-group button[type=submit]")
    assert "saved on" in page.locator(".flash.ok").inner_text()
    assert admin.group_configs()[group].retry_max_times == 4
    page.locator("#groups").get_by_role("link", name=group, exact=True).wait_for()
    # a form post from another site is refused (the name is never resolved: only a header)
    refused = page.request.post(
        f"{dashboard}/group/{group}/delete", headers={"Origin": "http://elsewhere.invalid"}
    )
    assert refused.status == 403
    assert group in admin.group_configs()
    page.goto(f"{dashboard}/group/{group}")
    page.once("dialog", lambda dialog: dialog.accept())
    _go(page, "#delete-group button[type=submit]")
    assert page.locator(".flash.ok").inner_text() == f"group {group} deleted"
    assert group not in admin.group_configs()


def test_lag_falls_to_zero_as_a_consumer_drains_and_reset_offset(
    page: Any, dashboard: str, cluster: EmbeddedCluster
) -> None:
    topic = _topic(cluster, "dash_lag_topic")
    group = "dash_lag_group"
    seen: set[bytes] = set()
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], _ctx: Any) -> ConsumeConcurrentlyStatus:
        with lock:
            seen.update(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    _send(cluster, topic, 10, "first")
    consumer = _consumer(cluster, group, topic, listener)
    try:
        wait_until(lambda: len(seen) == 10, 30, "the first batch consumed")
    finally:
        consumer.shutdown()  # persists its offsets
    _send(cluster, topic, 30, "second")

    page.goto(f"{dashboard}/group/{group}")
    # 30 behind, summed over both brokers' queues
    assert page.locator("#lag-total").inner_text() == "30"
    assert page.locator("#progress tbody tr").count() >= 4  # 2 queues x 2 brokers (+ retry)
    page.goto(f"{dashboard}/groups")
    row = page.locator("#groups tbody tr", has=page.locator(f"a:text-is('{group}')"))
    assert row.locator("td.lag").inner_text() == "30"

    page.goto(f"{dashboard}/group/{group}")
    consumer = _consumer(cluster, group, topic, listener)
    try:
        page.wait_for_function("document.getElementById('lag-total').textContent === '0'", timeout=30_000)
        assert len(seen) == 40
        page.reload()  # the live client, its connection and which queues it holds
        assert page.locator("#connections tbody tr").count() == 1
        assert page.locator("#progress").inner_text().count("@") >= 4  # client ids hold the queues
    finally:
        consumer.shutdown()

    # reset the (offline) group to the earliest offsets: the lag is every message again
    page.reload()
    page.check("#reset-form input[value=earliest]")
    page.fill("#reset-form input[name=topic]", topic)
    _go(page, "#reset-form button[type=submit]")
    assert "reset (OFFLINE)" in page.locator(".flash.ok").inner_text()
    assert page.locator("#lag-total").inner_text() == "40"


def test_find_a_message_by_key_and_see_its_consume_state(
    page: Any, dashboard: str, cluster: EmbeddedCluster
) -> None:
    topic = _topic(cluster, "dash_key_topic")
    _send(cluster, topic, 5, "keyed")
    page.goto(f"{dashboard}/messages")
    page.fill("#by-key input[name=topic]", topic)
    page.fill("#by-key input[name=key]", "keyed-3")
    _go(page, "#by-key button[type=submit]")
    rows = page.locator("#results tbody tr")
    assert rows.count() == 1
    assert rows.first.locator("td.keys").inner_text() == "keyed-3"
    with page.expect_navigation():
        rows.first.locator("a").click()
    assert page.locator("#body").inner_text() == "keyed-3"
    _no_error(page)

    # by time range over the topic, and by id
    page.goto(f"{dashboard}/messages")
    page.fill("#by-topic input[name=topic]", topic)
    _go(page, "#by-topic button[type=submit]")
    assert page.locator("#results tbody tr").count() == 5
    msg_id = page.locator("#results tbody tr a").first.inner_text()
    page.goto(f"{dashboard}/messages")
    page.fill("#by-id input[name=topic]", topic)
    page.fill("#by-id input[name=id]", msg_id)
    _go(page, "#by-id button[type=submit]")
    assert re.search(r"keyed-\d", page.locator("#body").inner_text())


def test_resend_a_dead_letter_and_see_it_consumed(
    page: Any, dashboard: str, cluster: EmbeddedCluster
) -> None:
    topic = _topic(cluster, "dash_dlq_topic")
    group = "dash_dlq_group"
    failing = threading.Event()
    failing.set()
    consumed: list[bytes] = []

    def listener(msgs: list[MessageExt], _ctx: Any) -> ConsumeConcurrentlyStatus:
        if failing.is_set():
            return ConsumeConcurrentlyStatus.RECONSUME_LATER
        consumed.extend(m.body for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = _consumer(cluster, group, topic, listener, max_reconsume_times=0)
    try:
        _send(cluster, topic, 1, "doomed")
        page.goto(f"{dashboard}/dlq?group={group}")

        def in_dlq() -> bool:
            page.reload()
            return page.locator("#dlq tbody tr td form").count() == 1

        wait_until(in_dlq, 30, "the message in the DLQ page", interval_s=0.5)
        failing.clear()
        with page.expect_navigation():
            page.locator("#dlq tbody tr button").click()
        assert "resent 1 dead letter" in page.locator(".flash.ok").inner_text()
        wait_until(lambda: consumed == [b"doomed-0"], 30, "the resent dead letter consumed")

        # resend the original message from its detail page, straight to the live client
        page.goto(f"{dashboard}/messages?mode=key&topic={topic}&key=doomed-0")
        with page.expect_navigation():
            page.locator("#results tbody tr a").first.click()
        assert group in page.locator("#tracks").inner_text()
        page.fill("#resend-form input[name=group]", group)
        page.select_option("#resend-form select[name=method]", "direct")
        _go(page, "#resend-form button[type=submit]")
        assert "CR_SUCCESS" in page.locator(".flash.ok").inner_text()
        assert consumed == [b"doomed-0", b"doomed-0"]
    finally:
        consumer.shutdown()


def test_trace_page_shows_the_send_and_the_consuming_group(
    page: Any, dashboard: str, cluster: EmbeddedCluster, admin: Admin
) -> None:
    topic = _topic(cluster, "dash_trace_topic")
    pgroup, cgroup = "dash_trace_pg", "dash_trace_cg"
    consumed: set[str] = set()
    lock = threading.Lock()

    def listener(msgs: list[MessageExt], _ctx: Any) -> ConsumeConcurrentlyStatus:
        with lock:
            consumed.update(m.msg_id for m in msgs)
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    consumer = _consumer(cluster, cgroup, topic, listener, enable_msg_trace=True)
    producer = Producer(pgroup, namesrv_addr=cluster.namesrv_addr, client_config=FAST, enable_msg_trace=True)
    producer.start()
    try:
        sent = [producer.send(Message(topic, f"traced-{i}".encode(), keys=f"traced-{i}")) for i in range(3)]
        ids = [r.msg_id for r in sent]
        wait_until(lambda: set(ids) <= consumed, 30, "the traced messages consumed")

        def traced() -> bool:
            t = admin.query_msg_trace(ids[1])
            return len(t.pubs) == 1 and any(a.after is not None for a in t.consumers.get(cgroup, []))

        wait_until(traced, 30, "the send and consume records in the trace topic", interval_s=0.5)
        # from the message's detail page, follow its trace link
        page.goto(f"{dashboard}/message?id={ids[1]}&topic={topic}")
        _go(page, "#trace-link")
        _no_error(page)
        assert page.locator("input[name=id]").input_value() == ids[1]
        pub = page.locator("#trace-pub tbody tr")
        assert pub.count() == 1
        cells = pub.first.locator("td").all_inner_texts()
        assert cells[0] == pgroup and cells[2] == topic and cells[4] == "traced-1"
        assert cells[6] in cluster.broker_addrs  # the broker it was stored on
        assert cells[7] != "-"  # the store time, read from the stored message
        assert cells[9] == "success"
        sub = page.locator(f".trace-sub[data-group={cgroup}] tbody tr")
        assert sub.count() == 1
        sub_cells = sub.first.locator("td").all_inner_texts()
        assert sub_cells[2] == "0"  # first delivery, no retry
        assert sub_cells[3] != "-" and sub_cells[4] != "-"  # SubBefore and SubAfter paired
        assert sub_cells[5].endswith(" ms") and sub_cells[6] == "success"

        # search by id from the trace page itself; an unknown id has no trace
        page.goto(f"{dashboard}/trace")
        page.fill("#trace-form input[name=id]", ids[2])
        _go(page, "#trace-form button[type=submit]")
        assert "traced-2" in page.locator("#trace-pub").inner_text()
        assert page.locator(".trace-sub").first.get_attribute("data-group") == cgroup
        page.goto(f"{dashboard}/trace?id=0A0A0A0A00002A9F0000000000000000")
        assert page.locator("#no-trace").count() == 1
        _no_error(page)
    finally:
        producer.shutdown()
        consumer.shutdown()


def test_login_from_a_user_file(browser: Any, cluster: EmbeddedCluster, tmp_path: Any) -> None:
    users = tmp_path / "users.properties"
    users.write_text("admin=opensesame,1\n", encoding="utf-8")
    proc = DashboardProcess(cluster.namesrv_addr, tmp_path, "--users", str(users))
    pg = browser.new_page()
    try:
        pg.goto(f"{proc.url}/topics")
        assert pg.url.endswith("/login?next=/topics")
        assert pg.request.get(f"{proc.url}/api/overview").status == 401
        pg.fill("input[name=username]", "admin")
        pg.fill("input[name=password]", "wrong")
        _go(pg, "button[type=submit]")
        assert "wrong user name or password" in pg.locator(".flash.err").inner_text()
        pg.fill("input[name=username]", "admin")
        pg.fill("input[name=password]", "opensesame")
        _go(pg, "button[type=submit]")
        pg.locator("#topics tbody tr").first.wait_for()
        assert pg.url.endswith("/topics")
        _go(pg, "a.logout")
        pg.goto(f"{proc.url}/cluster")
        assert "/login" in pg.url
    finally:
        pg.close()
        proc.stop()
