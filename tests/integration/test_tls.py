"""TLS on the remoting layer against real rocketq processes, with a CA made in the test.

``openssl`` (a subprocess) makes a throwaway CA and a server certificate for 127.0.0.1.
Covered: client <-> broker and broker -> name server over TLS (both servers enforcing, so a
plain registration could not get through), permissive mode serving a plain and a TLS
client at once, enforcing mode refusing a plain client, and a client that verifies the
server rejecting a certificate from an unknown CA.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketq.client import Message, MessageQueue, Producer, PullConsumer, PullStatus
from rocketq.client.config import ClientConfig
from rocketq.errors import ConnectError
from rocketq.protocol.codes import RequestCode, ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.server import Channel, RemotingServer, ServerThread
from rocketq.remoting.tls import TlsConfig, TlsMode, client_ssl_context, server_ssl_context
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.integration

_instances = itertools.count()


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _make_ca(directory: Path, name: str) -> tuple[Path, Path]:
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", f"/CN={name}",
        "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=directory,
    )  # fmt: skip
    return directory / f"{name}.pem", directory / f"{name}.key"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("openssl") is None:
        pytest.fail("the TLS tests need the openssl command")
    d = tmp_path_factory.mktemp("pki")
    ca, ca_key = _make_ca(d, "test-ca")
    other_ca, _ = _make_ca(d, "other-ca")
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", "server.key",
             "-out", "server.csr", cwd=d)  # fmt: skip
    _openssl("x509", "-req", "-in", "server.csr", "-CA", ca.name, "-CAkey", ca_key.name, "-CAcreateserial",
             "-days", "1", "-extfile", "san.cnf", "-out", "server.pem", cwd=d)  # fmt: skip
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=client", "-keyout", "client.key",
             "-out", "client.csr", cwd=d)  # fmt: skip
    _openssl("x509", "-req", "-in", "client.csr", "-CA", ca.name, "-CAkey", ca_key.name, "-CAcreateserial",
             "-days", "1", "-out", "client.pem", cwd=d)  # fmt: skip
    return {
        "ca": ca,
        "other_ca": other_ca,
        "cert": d / "server.pem",
        "key": d / "server.key",
        "client_cert": d / "client.pem",
        "client_key": d / "client.key",
    }


def _server_keys(pki: dict[str, Path], mode: str) -> dict[str, str]:
    return {
        "tls.server.mode": mode,
        "tls.server.certPath": str(pki["cert"]),
        "tls.server.keyPath": str(pki["key"]),
    }


def _verifying(pki: dict[str, Path], ca: str = "ca") -> TlsConfig:
    return TlsConfig(client_auth_server=True, client_trust_cert_path=str(pki[ca]))


def _cluster_info(addr: str, client: RemotingClient) -> RemotingCommand:
    return client.invoke_sync(addr, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5000)


@pytest.fixture(scope="module")
def enforcing(pki: dict[str, Path]) -> Iterator[EmbeddedCluster]:
    trust = {
        "tls.enable": "true",
        "tls.client.authServer": "true",
        "tls.client.trustCertPath": str(pki["ca"]),
    }
    with EmbeddedCluster(
        separate_namesrv=True,
        namesrv_conf=_server_keys(pki, "enforcing"),
        broker_conf={**_server_keys(pki, "enforcing"), **trust},
        ssl_context=client_ssl_context(_verifying(pki)),
    ) as cluster:
        yield cluster


def test_client_to_broker_and_broker_to_name_server_over_tls(
    enforcing: EmbeddedCluster, pki: dict[str, Path]
) -> None:
    # The cluster started: the broker registered with an enforcing name server, over TLS.
    info = enforcing.cluster_info()
    assert set(info.broker_addr_table) == set(enforcing.broker_names)
    topic = "TlsTopic"
    enforcing.create_topic(topic, 1)
    config = ClientConfig(
        namesrv_addr=enforcing.namesrv_addr,
        instance_name=f"tls-{next(_instances)}",
        use_tls=True,
        tls=_verifying(pki),
    )
    mq = MessageQueue(topic, enforcing.broker_names[0], 0)
    with Producer("TlsProducer", client_config=config) as producer:
        for i in range(3):
            producer.send(Message(topic, b"x" * 70_000 + str(i).encode()), queue=mq)  # records > 64 KiB
    with PullConsumer("TlsGroup", client_config=config) as consumer:
        result = consumer.pull(mq, "*", 0, 32)
    assert result.pull_status is PullStatus.FOUND
    assert [m.body[-1:] for m in result.msg_found_list] == [b"0", b"1", b"2"]


def test_enforcing_refuses_a_plain_client(enforcing: EmbeddedCluster) -> None:
    with RemotingClient(name="plain") as plain, pytest.raises(ConnectError):
        _cluster_info(enforcing.namesrv_addr, plain)


def test_a_verifying_client_rejects_an_unknown_ca(enforcing: EmbeddedCluster, pki: dict[str, Path]) -> None:
    ctx = client_ssl_context(_verifying(pki, "other_ca"))
    with RemotingClient(name="wrong-ca", ssl_context=ctx) as client, pytest.raises(ConnectError, match="TLS"):
        _cluster_info(enforcing.namesrv_addr, client)


def test_permissive_serves_plain_and_tls_at_once(pki: dict[str, Path]) -> None:
    with EmbeddedCluster(broker_conf=_server_keys(pki, "permissive")) as cluster:
        tls_ctx = client_ssl_context(_verifying(pki))
        with RemotingClient(name="plain") as plain, RemotingClient(name="tls", ssl_context=tls_ctx) as tls:
            for addr in (cluster.namesrv_addr, cluster.broker_addrs[0]):
                request = RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO)
                code = RequestCode.GET_BROKER_CLUSTER_INFO if addr == cluster.namesrv_addr else request.code
                for client in (plain, tls, plain, tls):  # both connections stay open side by side
                    answer = client.invoke_sync(addr, RemotingCommand.request(code), 5000)
                    assert answer.code == ResponseCode.SUCCESS
                assert plain.is_connected(addr) and tls.is_connected(addr)


def test_a_disabled_server_closes_a_tls_client(
    embedded_cluster: EmbeddedCluster, pki: dict[str, Path]
) -> None:
    # tls.server.mode=disabled (the default): a TLS hello is no frame, the connection is closed
    with (
        RemotingClient(name="tls", ssl_context=client_ssl_context(TlsConfig())) as client,
        pytest.raises(ConnectError),
    ):
        _cluster_info(embedded_cluster.namesrv_addr, client)


def test_server_requiring_client_certificates(pki: dict[str, Path]) -> None:
    keys = {
        **_server_keys(pki, "enforcing"),
        "tls.server.need.client.auth": "require",
        "tls.server.trustCertPath": str(pki["ca"]),
        # the broker reaches its (same-process) name server with a certificate too
        "tls.enable": "true",
        "tls.client.certPath": str(pki["client_cert"]),
        "tls.client.keyPath": str(pki["client_key"]),
    }
    with_cert = TlsConfig(client_cert_path=str(pki["client_cert"]), client_key_path=str(pki["client_key"]))
    with EmbeddedCluster(broker_conf=keys, ssl_context=client_ssl_context(with_cert)) as cluster:
        with RemotingClient(name="mtls", ssl_context=client_ssl_context(with_cert)) as client:
            assert _cluster_info(cluster.namesrv_addr, client).code == ResponseCode.SUCCESS
        anonymous = client_ssl_context(TlsConfig())
        with RemotingClient(name="anonymous", ssl_context=anonymous) as client, pytest.raises(ConnectError):
            _cluster_info(cluster.namesrv_addr, client)


class _Echo:
    async def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        return request.make_response(ResponseCode.SUCCESS, body=request.body)


@pytest.mark.parametrize("mode", [TlsMode.ENFORCING, TlsMode.PERMISSIVE])
def test_many_concurrent_calls_over_tls(pki: dict[str, Path], mode: TlsMode) -> None:
    """Reads and writes share one SSL object: 8 threads of sync calls and a burst of async
    calls (small and 200 KiB bodies) must all be answered, in any interleaving."""
    server = RemotingServer(name="tls-echo")
    server.register_default_processor(_Echo())
    server.enable_tls(mode, server_ssl_context(TlsConfig.from_properties(_server_keys(pki, mode.value))))
    with (
        ServerThread(server),
        RemotingClient(name="tls", ssl_context=client_ssl_context(_verifying(pki))) as client,
    ):
        addr = f"127.0.0.1:{server.port}"
        big = b"b" * 200_000

        def worker(n: int) -> None:
            for i in range(60):
                body = big if i % 10 == 0 else f"{n}-{i}".encode()
                assert client.invoke_sync(addr, RemotingCommand.request(30, None, body), 10_000).body == body

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        futures = [
            client.invoke_async(addr, RemotingCommand.request(30, None, str(i).encode()), 10_000)
            for i in range(500)
        ]
        for t in threads:
            t.join(60)
        assert [f.result(10).body for f in futures] == [str(i).encode() for i in range(500)]
        assert not any(t.is_alive() for t in threads)
