"""Config plumbing of ACL and TLS: broker.conf / name-server keys, secrets kept out of
reports, the file location rule, client-side argument checks and the exposure warning."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rocketq.acl import AclConfigError, resolve_acl_file
from rocketq.acl.client_security import client_security
from rocketq.acl.plain_access_validator import broker_rule
from rocketq.acl.security import install_server_security, is_loopback_host
from rocketq.broker.config import BrokerConfig
from rocketq.client.config import ClientConfig
from rocketq.errors import IllegalArgumentError
from rocketq.namesrv.config import NamesrvConfig
from rocketq.remoting.server import RemotingServer
from rocketq.remoting.tls import TlsConfig, TlsMode


def test_broker_conf_keys() -> None:
    cfg = BrokerConfig.from_properties(
        {
            "aclEnable": "true",
            "aclPlainFile": "conf/other.yml",
            "accessKey": "brokerKey1",
            "secretKey": "brokerSecret1",
            "tls.server.mode": "permissive",
            "tls.server.certPath": "/c.pem",
            "tls.server.keyPath": "/k.pem",
            "tls.enable": "true",
        }
    )
    assert cfg.acl_enable and cfg.acl_plain_file == "conf/other.yml"
    assert (cfg.access_key, cfg.secret_key) == ("brokerKey1", "brokerSecret1")
    assert cfg.tls.server_mode is TlsMode.PERMISSIVE and cfg.tls.enable
    props = cfg.to_properties()  # what GET_BROKER_CONFIG reports
    assert props["aclEnable"] == "true" and props["accessKey"] == "brokerKey1"
    assert "secretKey" not in props and "brokerSecret1" not in repr(cfg)


def test_servers_bind_loopback_by_default() -> None:
    assert BrokerConfig().listen_host == "127.0.0.1"
    assert NamesrvConfig().host == "127.0.0.1"


def test_namesrv_keys() -> None:
    cfg = NamesrvConfig().with_properties({"aclEnable": "true", "tls.server.mode": "disabled"})
    assert cfg.acl_enable and cfg.tls.server_mode is TlsMode.DISABLED
    assert cfg.to_properties()["aclEnable"] == "true"


def test_tls_config_checks() -> None:
    with pytest.raises(IllegalArgumentError, match="certPath"):
        TlsConfig(server_mode=TlsMode.ENFORCING)
    with pytest.raises(IllegalArgumentError, match=r"tls\.server\.mode"):
        TlsConfig.from_properties({"tls.server.mode": "sometimes"})
    assert "pw" not in repr(TlsConfig(client_key_password="pw"))


def test_acl_file_location(tmp_path: Path) -> None:
    assert resolve_acl_file(None, str(tmp_path)) == tmp_path / "conf" / "plain_acl.yml"
    assert resolve_acl_file("conf/x.yml", str(tmp_path)) == tmp_path / "conf" / "x.yml"
    assert resolve_acl_file("/abs/acl.yml", None) == Path("/abs/acl.yml")
    with pytest.raises(AclConfigError, match="ROCKETMQ_HOME"):
        resolve_acl_file(None, "")


def test_client_side_arguments() -> None:
    assert client_security() == (None, None)
    hook, ctx = client_security(access_key="ak", secret_key="sk", use_tls=True)
    assert hook is not None and ctx is not None
    with pytest.raises(IllegalArgumentError):
        client_security(access_key="ak")
    with pytest.raises(IllegalArgumentError):
        ClientConfig(secret_key="only")
    assert "topSecret" not in repr(ClientConfig(access_key="ak", secret_key="topSecret"))


def test_exposed_server_without_acl_warns(caplog: pytest.LogCaptureFixture) -> None:
    assert is_loopback_host("127.0.0.1") and is_loopback_host("::1") and not is_loopback_host("0.0.0.0")
    with caplog.at_level(logging.WARNING, logger="rocketq.acl.security"):
        for host, role in (("0.0.0.0", "broker x"), ("127.0.0.1", "broker y")):
            install_server_security(
                RemotingServer(host, 0),
                role=role,
                acl_enable=False,
                acl_plain_file=None,
                tls=TlsConfig(),
                rule=broker_rule,
            )
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 1 and "broker x listens on 0.0.0.0 with aclEnable=false" in warned[0]


def test_acl_on_without_a_file_location_fails_clearly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    with pytest.raises(AclConfigError, match="ROCKETMQ_HOME"):
        install_server_security(
            RemotingServer(),
            role="broker",
            acl_enable=True,
            acl_plain_file=None,
            tls=TlsConfig(),
            rule=broker_rule,
        )


def test_tls_config_file(tmp_path: Path) -> None:
    path = tmp_path / "tls.properties"
    path.write_text("tls.client.authServer=true\ntls.client.trustCertPath=/from-file.pem\n")
    cfg = TlsConfig.from_properties({"tls.config.file": str(path), "tls.client.trustCertPath": "/direct.pem"})
    assert cfg.client_auth_server and cfg.client_trust_cert_path == "/direct.pem"
    assert BrokerConfig.from_properties({"tls.config.file": str(path)}).tls.client_auth_server
    with pytest.raises(IllegalArgumentError, match=r"tls\.config\.file"):
        TlsConfig.from_properties({"tls.config.file": str(tmp_path / "missing")})
