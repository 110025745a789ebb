"""The web dashboard against a cluster with ACL on (aclEnable=true on the name server and
broker, accounts in $ROCKETMQ_HOME/conf/plain_acl.yml), in Debian's headless Chromium.

Right credentials (from the environment variables every rocketq command reads) show the
cluster and let the operator send a test message; wrong ones (from ``--access-key`` /
``--secret-key``) give the error page naming the refusal and the options to check, never a
traceback, and the dashboard stays up.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rocketq.acl import AclClientRPCHook, SessionCredentials
from rocketq.cli._security import ACCESS_KEY_ENV, SECRET_KEY_ENV
from rocketq.testing.cluster import EmbeddedCluster
from tests.dashboard.harness import DashboardProcess, browser_test_marks, launch_browser

pytest.importorskip("starlette", reason="rocketq[dashboard] (in dev) is not installed")
pytest.importorskip("yaml", reason="rocketq[acl] (in dev) is not installed")

pytestmark = browser_test_marks()

ADMIN = SessionCredentials("dashAdmin1", "dashSecret1")
TOPIC = "acl_dash_topic"
ACL = textwrap.dedent(
    f"""\
    accounts:
      - accessKey: {ADMIN.access_key}
        secretKey: {ADMIN.secret_key}
        admin: true
    """
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedCluster]:
    home = tmp_path_factory.mktemp("rocketmq-home")
    (home / "conf").mkdir()
    (home / "conf" / "plain_acl.yml").write_text(ACL)
    with EmbeddedCluster(
        broker_conf={"aclEnable": "true", "accessKey": ADMIN.access_key, "secretKey": ADMIN.secret_key},
        env={"ROCKETMQ_HOME": str(home)},
        rpc_hook=AclClientRPCHook(ADMIN),
    ) as c:
        c.create_topic(TOPIC, 2)
        c.wait_route(TOPIC)
        yield c


@pytest.fixture(scope="module")
def browser(cluster: EmbeddedCluster) -> Iterator[Any]:
    with launch_browser() as ctx:
        yield ctx


def _dashboard(
    cluster: EmbeddedCluster, name: str, *extra: str, env: dict[str, str] | None = None
) -> DashboardProcess:
    work = Path(cluster.store_dir) / name
    work.mkdir(exist_ok=True)
    return DashboardProcess(cluster.namesrv_addr, work, *extra, env=env)


def test_credentials_from_the_environment_open_the_dashboard(browser: Any, cluster: EmbeddedCluster) -> None:
    dash = _dashboard(
        cluster, "good", env={ACCESS_KEY_ENV: ADMIN.access_key, SECRET_KEY_ENV: ADMIN.secret_key}
    )
    page = browser.new_page()
    page.set_default_timeout(20_000)
    try:
        response = page.goto(f"{dash.url}/cluster")
        assert response.status == 200
        assert page.locator(".flash.err").count() == 0
        assert cluster.broker_addrs[0] in page.locator("#brokers").inner_text()
        page.goto(f"{dash.url}/topics")
        assert TOPIC in page.locator("#topics").inner_text()
        # a write, signed too: a test message from the topic page
        page.goto(f"{dash.url}/topic/{TOPIC}")
        page.fill("#send-form textarea[name=body]", "signed")
        with page.expect_navigation():
            page.locator("#send-form button[type=submit]").click()
        assert page.locator(".flash.ok").inner_text().startswith("SEND_OK")
    finally:
        page.close()
        dash.stop()


def test_wrong_credentials_show_an_error_page(browser: Any, cluster: EmbeddedCluster) -> None:
    dash = _dashboard(cluster, "bad", "--access-key", ADMIN.access_key, "--secret-key", "notTheSecret")
    page = browser.new_page()
    page.set_default_timeout(20_000)
    refused = f"Check signature failed for accessKey={ADMIN.access_key}"
    try:
        # the cluster page lists the broker with its refusal; a page that needs the broker is
        # the error page; a search shows the refusal in place
        for path, status in (
            ("/cluster", 200),
            (f"/topic/{TOPIC}", 400),
            ("/groups", 400),
            (f"/messages?mode=topic&topic={TOPIC}", 200),
        ):
            response = page.goto(dash.url + path)
            assert response.status == status, path
            errors = " ".join(page.locator("td.err, .flash.err[role=alert]").all_inner_texts())
            assert refused in errors, (path, errors)
            hint = page.locator("#acl-hint").inner_text()
            assert "--access-key" in hint and "ROCKETMQ_SECRET_KEY" in hint
            body = page.content()
            assert "Traceback" not in body and "Internal Server Error" not in body
        page.goto(f"{dash.url}/cluster")
        assert cluster.broker_addrs[0] in page.locator("#brokers").inner_text()  # listed, with its refusal
        # an error that is no refusal gets no hint
        page.goto(f"{dash.url}/trace?id=AB")
        assert page.locator(".flash.err").count() == 1 and page.locator("#acl-hint").count() == 0
        assert dash.proc.poll() is None  # still serving
    finally:
        page.close()
        dash.stop()
