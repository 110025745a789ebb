"""Credentials and TLS settings -> the arguments of a client's RemotingClient.

Used by every client role (producers and consumers through ``MQClientInstance``, the admin
API, the Spark connector, a broker towards its name servers): :func:`client_security`
returns ``(rpc_hook, ssl_context)`` for :class:`~rocketq.remoting.client.RemotingClient`,
both None when neither credentials nor TLS are configured, so the default path is exactly
the unsecured one. Mirrors how ``AclClientRPCHook`` and ``ClientConfig.useTLS`` reach
``NettyRemotingClient`` in Java.
"""

from __future__ import annotations

import ssl
from typing import Protocol

from rocketq.acl.signing import AclClientRPCHook, SessionCredentials
from rocketq.errors import IllegalArgumentError
from rocketq.remoting.client import RpcHook
from rocketq.remoting.tls import TlsConfig, client_ssl_context

__all__ = ["ClientSecuritySettings", "client_security", "client_security_of"]


def client_security(
    *,
    access_key: str | None = None,
    secret_key: str | None = None,
    security_token: str | None = None,
    use_tls: bool = False,
    tls: TlsConfig | None = None,
) -> tuple[RpcHook | None, ssl.SSLContext | None]:
    """``(rpc_hook, ssl_context)`` for a RemotingClient: signing when both keys are given
    (one without the other is an IllegalArgumentError), TLS when ``use_tls`` or ``tls.enable``."""
    hook: RpcHook | None = None
    if access_key or secret_key:
        if not (access_key and secret_key):
            raise IllegalArgumentError("access key and secret key must be given together")
        hook = AclClientRPCHook(SessionCredentials(access_key, secret_key, security_token or None))
    context: ssl.SSLContext | None = None
    if use_tls or (tls is not None and tls.enable):
        context = client_ssl_context(tls or TlsConfig())
    return hook, context


class ClientSecuritySettings(Protocol):
    """What :func:`client_security_of` reads (``ClientConfig``, the Spark options, ...)."""

    @property
    def access_key(self) -> str | None: ...
    @property
    def secret_key(self) -> str | None: ...
    @property
    def security_token(self) -> str | None: ...
    @property
    def use_tls(self) -> bool: ...
    @property
    def tls(self) -> TlsConfig | None: ...


def client_security_of(settings: ClientSecuritySettings) -> tuple[RpcHook | None, ssl.SSLContext | None]:
    """:func:`client_security` of a settings object."""
    return client_security(
        access_key=settings.access_key,
        secret_key=settings.secret_key,
        security_token=settings.security_token,
        use_tls=settings.use_tls,
        tls=settings.tls,
    )
