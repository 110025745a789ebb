"""Credentials and TLS options of the operator commands.

``--access-key``/``--secret-key``/``--security-token`` sign every request as
``AclClientRPCHook`` does (for clusters with ``aclEnable=true``); each falls back to an
environment variable (``ROCKETMQ_ACCESS_KEY``, ``ROCKETMQ_SECRET_KEY``,
``ROCKETMQ_SECURITY_TOKEN``), which keeps the secret out of the process list and the shell
history. ``--tls`` speaks TLS; ``--tls-config FILE`` reads Java's ``tls.client.*``
properties (``tls.client.authServer``, ``tls.client.trustCertPath``, ``tls.client.certPath``,
``tls.client.keyPath``, ``tls.client.keyPassword``) like Java's ``tls.config.file``, and
implies ``--tls``.
"""

from __future__ import annotations

import argparse
import os
from typing import Final

from rocketq.client.config import ClientConfig
from rocketq.remoting.tls import TLS_CONFIG_FILE, TlsConfig

__all__ = [
    "ACCESS_KEY_ENV",
    "SECRET_KEY_ENV",
    "SECURITY_TOKEN_ENV",
    "add_security_options",
    "client_config_from_args",
]

ACCESS_KEY_ENV: Final = "ROCKETMQ_ACCESS_KEY"
SECRET_KEY_ENV: Final = "ROCKETMQ_SECRET_KEY"
SECURITY_TOKEN_ENV: Final = "ROCKETMQ_SECURITY_TOKEN"


def add_security_options(parser: argparse.ArgumentParser) -> None:
    """Add the credential and TLS options to one subcommand."""
    group = parser.add_argument_group("security")
    group.add_argument("--access-key", default=None, help=f"ACL access key (default: ${ACCESS_KEY_ENV})")
    group.add_argument(
        "--secret-key", default=None, help=f"ACL secret key (default: ${SECRET_KEY_ENV}; prefer the variable)"
    )
    group.add_argument(
        "--security-token", default=None, help=f"ACL security token (default: ${SECURITY_TOKEN_ENV})"
    )
    group.add_argument("--tls", action="store_true", help="connect with TLS")
    group.add_argument(
        "--tls-config",
        default=None,
        metavar="FILE",
        help="Java properties with tls.client.* settings (implies --tls)",
    )


def client_config_from_args(args: argparse.Namespace) -> ClientConfig:
    """A ClientConfig carrying the credentials and TLS settings of ``args`` (and the environment)."""
    access_key = getattr(args, "access_key", None) or os.environ.get(ACCESS_KEY_ENV) or None
    secret_key = getattr(args, "secret_key", None) or os.environ.get(SECRET_KEY_ENV) or None
    token = getattr(args, "security_token", None) or os.environ.get(SECURITY_TOKEN_ENV) or None
    tls_file = getattr(args, "tls_config", None)
    tls = TlsConfig.from_properties({TLS_CONFIG_FILE: tls_file}) if tls_file else None
    return ClientConfig(
        access_key=access_key,
        secret_key=secret_key,
        security_token=token,
        use_tls=bool(getattr(args, "tls", False) or tls_file),
        tls=tls,
    )
