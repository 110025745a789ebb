"""Access control (ACL) for rocketq: request signing, ``plain_acl.yml``, permission checks.

Mirrors Apache RocketMQ 4.9.7's ``acl`` module. The client side is
:class:`~rocketq.acl.signing.AclClientRPCHook` (credentials in
:class:`~rocketq.acl.signing.SessionCredentials`); the server side is
:class:`~rocketq.acl.plain_permission_manager.PlainPermissionManager`, whose validator the
broker and the name server install as their remoting server's request hook when
``aclEnable=true`` (wired by :mod:`rocketq.acl.security`; clients use
:mod:`rocketq.acl.client_security`). Importing this package loads only the pure logic.
"""

from __future__ import annotations

from rocketq.acl.plain_access_validator import (
    BROKER_CODE_RULES,
    NAMESRV_OPEN_CODES,
    AclDenied,
    CodeRule,
    PlainAccessValidator,
    broker_rule,
    namesrv_rule,
)
from rocketq.acl.plain_acl_config import PlainAclData, load_plain_acl, parse_plain_acl, resolve_acl_file
from rocketq.acl.remote_address import AclConfigError
from rocketq.acl.signing import AclClientRPCHook, SessionCredentials, cal_signature, combine_request_content

__all__ = [
    "BROKER_CODE_RULES",
    "NAMESRV_OPEN_CODES",
    "AclClientRPCHook",
    "AclConfigError",
    "AclDenied",
    "CodeRule",
    "PlainAccessValidator",
    "PlainAclData",
    "SessionCredentials",
    "broker_rule",
    "cal_signature",
    "combine_request_content",
    "load_plain_acl",
    "namesrv_rule",
    "parse_plain_acl",
    "resolve_acl_file",
]
