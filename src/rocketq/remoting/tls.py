"""TLS settings and SSL contexts for the remoting layer (stdlib :mod:`ssl`).

Mirrors ``TlsSystemConfig``, ``TlsHelper`` and ``TlsMode`` of Apache RocketMQ 4.9.7. The
settings keep Java's property names (``tls.server.*``, ``tls.client.*``,
``tls.server.mode``), read from a mapping of Java properties (a ``broker.conf``, a
``tls.properties`` file or ``--set`` options) by :meth:`TlsConfig.from_properties`.

Server modes (``tls.server.mode``): ``disabled`` (plain only; a TLS hello is not a frame,
so the connection is closed), ``permissive`` (the first byte decides: 0x16, a TLS
handshake record, starts TLS; anything else is served plain; Java's ``HandshakeHandler``)
and ``enforcing`` (TLS only; a plain peer is disconnected). rocketq's default is
``disabled``, because it ships no certificate; Java defaults to ``permissive`` with a
self-signed test certificate (``tls.test.mode.enable``), which rocketq does not generate.

Client: ``tls.client.authServer`` false (Java's default) accepts any server certificate;
true verifies it against ``tls.client.trustCertPath`` (or the system store). Java never
checks host names (Netty's default), so neither does rocketq. A client certificate is
sent when ``tls.client.certPath`` and ``tls.client.keyPath`` are set.
"""

from __future__ import annotations

import enum
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from rocketq.errors import IllegalArgumentError

__all__ = ["TLS_HANDSHAKE_BYTE", "TlsConfig", "TlsMode", "client_ssl_context", "server_ssl_context"]

#: ``TlsSystemConfig.TLS_CONFIG_FILE``: a properties file with the other tls.* keys.
TLS_CONFIG_FILE = "tls.config.file"
#: ``HandshakeHandler.HANDSHAKE_MAGIC_CODE``: the content type of a TLS handshake record.
TLS_HANDSHAKE_BYTE = 0x16


class TlsMode(enum.Enum):
    """``TlsMode``: how a server treats TLS."""

    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"

    @classmethod
    def parse(cls, text: str) -> TlsMode:
        try:
            return cls(text.strip().lower())
        except ValueError:
            raise IllegalArgumentError(
                f"tls.server.mode must be disabled, permissive or enforcing, got {text!r}"
            ) from None


#: Java property -> TlsConfig attribute.
_PROPERTIES: dict[str, str] = {
    "tls.server.mode": "server_mode",
    "tls.enable": "enable",
    "tls.server.need.client.auth": "server_need_client_auth",
    "tls.server.keyPath": "server_key_path",
    "tls.server.keyPassword": "server_key_password",
    "tls.server.certPath": "server_cert_path",
    "tls.server.authClient": "server_auth_client",
    "tls.server.trustCertPath": "server_trust_cert_path",
    "tls.client.keyPath": "client_key_path",
    "tls.client.keyPassword": "client_key_password",
    "tls.client.certPath": "client_cert_path",
    "tls.client.authServer": "client_auth_server",
    "tls.client.trustCertPath": "client_trust_cert_path",
}
_JAVA_OF: dict[str, str] = {attr: key for key, attr in _PROPERTIES.items()}
_BOOLS = frozenset({"enable", "server_auth_client", "client_auth_server"})


@dataclass(frozen=True, kw_only=True)
class TlsConfig:
    """TLS settings with Java's names (``TlsSystemConfig``); key passwords never in ``repr``."""

    #: tls.server.mode (rocketq default: disabled, see the module docstring)
    server_mode: TlsMode = TlsMode.DISABLED
    #: tls.enable: the client (and a broker towards its name servers) speaks TLS
    enable: bool = False
    #: tls.server.need.client.auth: none / optional / require
    server_need_client_auth: str = "none"
    #: tls.server.keyPath (PEM private key)
    server_key_path: str | None = None
    #: tls.server.keyPassword
    server_key_password: str | None = field(default=None, repr=False)
    #: tls.server.certPath (PEM certificate chain)
    server_cert_path: str | None = None
    #: tls.server.authClient (read, no separate effect: stdlib ssl cannot accept an
    #: unverified client certificate, so with need.client.auth optional/require rocketq
    #: always verifies it against tls.server.trustCertPath)
    server_auth_client: bool = False
    #: tls.server.trustCertPath
    server_trust_cert_path: str | None = None
    #: tls.client.keyPath
    client_key_path: str | None = None
    #: tls.client.keyPassword
    client_key_password: str | None = field(default=None, repr=False)
    #: tls.client.certPath
    client_cert_path: str | None = None
    #: tls.client.authServer: verify the server certificate
    client_auth_server: bool = False
    #: tls.client.trustCertPath
    client_trust_cert_path: str | None = None

    def __post_init__(self) -> None:
        if self.server_need_client_auth not in ("none", "optional", "require"):
            raise IllegalArgumentError(
                f"tls.server.need.client.auth must be none, optional or require, got {self.server_need_client_auth!r}"
            )
        if self.server_mode is not TlsMode.DISABLED and not (self.server_cert_path and self.server_key_path):
            raise IllegalArgumentError(
                f"tls.server.mode={self.server_mode.value} needs tls.server.certPath and tls.server.keyPath"
            )

    @classmethod
    def from_properties(cls, props: Mapping[str, str], base: TlsConfig | None = None) -> TlsConfig:
        """Read the ``tls.*`` keys of ``props`` (others are ignored) over ``base``.

        ``tls.config.file`` names a Java properties file whose ``tls.*`` keys are read first
        (``TlsHelper``'s ``tls.config.file``; rocketq has no default file); keys given
        directly win over the file's.
        """
        file = props.get(TLS_CONFIG_FILE)
        if file:
            from rocketq.protocol.java_properties import parse_properties

            try:
                with open(file, encoding="utf-8") as fh:
                    merged = {**parse_properties(fh.read()), **props}
            except OSError as exc:
                raise IllegalArgumentError(f"{TLS_CONFIG_FILE}={file}: {exc}") from exc
            props = merged
        kwargs: dict[str, object] = {}
        for key, value in props.items():
            attr = _PROPERTIES.get(key)
            if attr is None:
                continue
            if attr == "server_mode":
                kwargs[attr] = TlsMode.parse(value)
            elif attr in _BOOLS:
                kwargs[attr] = value.strip().lower() == "true"
            else:
                kwargs[attr] = value.strip() or None
        if base is None:
            return cls(**kwargs)  # type: ignore[arg-type]
        import dataclasses

        return dataclasses.replace(base, **kwargs)  # type: ignore[arg-type]

    @staticmethod
    def property_of(attr: str) -> str:
        """The Java property of a field: ``server_mode`` -> ``tls.server.mode``."""
        return _JAVA_OF[attr]

    @staticmethod
    def property_names() -> frozenset[str]:
        """The Java property names this class reads."""
        return frozenset(_PROPERTIES) | {TLS_CONFIG_FILE}


def server_ssl_context(config: TlsConfig) -> ssl.SSLContext:
    """``TlsHelper.buildSslContext(false)``: the server's context."""
    if not (config.server_cert_path and config.server_key_path):
        raise IllegalArgumentError("a TLS server needs tls.server.certPath and tls.server.keyPath")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(config.server_cert_path, config.server_key_path, config.server_key_password)
    if config.server_trust_cert_path:
        ctx.load_verify_locations(config.server_trust_cert_path)
    if config.server_need_client_auth == "require":
        ctx.verify_mode = ssl.CERT_REQUIRED
    elif config.server_need_client_auth == "optional":
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


def client_ssl_context(config: TlsConfig) -> ssl.SSLContext:
    """``TlsHelper.buildSslContext(true)``: the client's context."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    if config.client_auth_server:
        ctx.verify_mode = ssl.CERT_REQUIRED
        if config.client_trust_cert_path:
            ctx.load_verify_locations(config.client_trust_cert_path)
        else:
            ctx.load_default_certs()
    else:
        # Java's InsecureTrustManagerFactory (tls.client.authServer=false, the default).
        ctx.verify_mode = ssl.CERT_NONE
    if config.client_cert_path and config.client_key_path:
        ctx.load_cert_chain(config.client_cert_path, config.client_key_path, config.client_key_password)
    return ctx
