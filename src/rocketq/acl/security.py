"""Wiring ACL and TLS into the remoting endpoints, one place for every role.

Servers (broker, name server): :func:`install_server_security` loads ``plain_acl.yml`` and
installs the validator as the remoting server's request hook when ``aclEnable`` is on
(``BrokerController.initialAcl``), sets the TLS mode (``NettyRemotingServer``'s
``TlsMode``), and warns when a server is reachable beyond loopback with ACL off.

The client half is :mod:`rocketq.acl.client_security`.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable

from rocketq.acl.plain_access_validator import CodeRule
from rocketq.acl.plain_acl_config import resolve_acl_dir, resolve_acl_file
from rocketq.acl.plain_permission_manager import PlainPermissionManager
from rocketq.remoting.server import RemotingServer
from rocketq.remoting.tls import TlsConfig, TlsMode, server_ssl_context

__all__ = ["install_server_security", "is_loopback_host"]

log = logging.getLogger(__name__)


def is_loopback_host(host: str) -> bool:
    """Whether binding ``host`` keeps a server reachable from this machine only."""
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def install_server_security(
    server: RemotingServer,
    *,
    role: str,
    acl_enable: bool,
    acl_plain_file: str | None,
    tls: TlsConfig,
    rule: Callable[[int], CodeRule],
) -> PlainPermissionManager | None:
    """Set up ACL and TLS on ``server`` before it starts; returns the started ACL manager
    (the caller shuts it down) or None with ACL off. Raises AclConfigError for a bad file."""
    manager: PlainPermissionManager | None = None
    if acl_enable:
        manager = PlainPermissionManager(
            resolve_acl_file(acl_plain_file), acl_dir=resolve_acl_dir(), rule=rule
        )
        server.set_request_validator(manager.validator.check)
        manager.start()
    elif not is_loopback_host(server.host):
        log.warning(
            "%s listens on %s with aclEnable=false: anyone who reaches it can send, consume, "
            "delete topics and rewrite configuration; set aclEnable=true with a plain_acl.yml, "
            "or bind 127.0.0.1",
            role,
            server.host,
        )
    if tls.server_mode is not TlsMode.DISABLED:
        server.enable_tls(tls.server_mode, server_ssl_context(tls))
    return manager
