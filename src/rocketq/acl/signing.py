"""Request signing: credentials, the content a signature covers, HMAC-SHA1, the client hook.

Mirrors ``SessionCredentials``, ``AclUtils.combineRequestContent``/``calSignature``,
``AclSigner`` and ``AclClientRPCHook`` of Apache RocketMQ 4.9.7 (acl module).

The algorithm (``AclClientRPCHook.doBeforeRequest``): put ``AccessKey`` (and
``SecurityToken`` when there is one) into the request's ext fields; take every ext field
except ``Signature`` in sorted key order (Java's ``TreeMap``: UTF-16 code unit order) and
concatenate their *values* as UTF-8; append the body; HMAC-SHA1 with the UTF-8 secret key;
standard base64. The result goes into ``Signature``.

Invariants: :class:`SessionCredentials` never shows its secret key or token in ``repr``
or ``str``; signing only adds fields, so signing an already signed request again (a
retried send) gives the same signature for the same content.
"""

from __future__ import annotations

import base64
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from rocketq.errors import IllegalArgumentError
from rocketq.protocol.frame import RemotingCommand

__all__ = [
    "ACCESS_KEY",
    "SECURITY_TOKEN",
    "SIGNATURE",
    "AclClientRPCHook",
    "SessionCredentials",
    "cal_signature",
    "combine_request_content",
]

#: ``SessionCredentials.ACCESS_KEY``: the ext field naming the account.
ACCESS_KEY: Final = "AccessKey"
#: ``SessionCredentials.SECURITY_TOKEN``: optional, signed along with the rest.
SECURITY_TOKEN: Final = "SecurityToken"
#: ``SessionCredentials.SIGNATURE``: the base64 HMAC-SHA1; never part of the signed content.
SIGNATURE: Final = "Signature"


@dataclass(frozen=True)
class SessionCredentials:
    """An access key, its secret key and an optional security token (``SessionCredentials``).

    The secret key and the token are left out of ``repr`` so logs and plans never show them.
    """

    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.access_key or not self.secret_key:
            raise IllegalArgumentError("access key and secret key must both be non-empty")


def _java_string_order(key: str) -> bytes:
    # TreeMap<String, String> compares UTF-16 code units; for keys within the BMP this is
    # code point order, and big-endian UTF-16 bytes order them exactly as Java does.
    return key.encode("utf-16-be")


def combine_request_content(
    ext_fields: Mapping[str, str] | None,
    body: bytes | memoryview | None,
    *,
    skip: frozenset[str] = frozenset(),
) -> bytes:
    """The bytes a signature covers (``AclUtils.combineRequestContent``).

    The values of ``ext_fields`` except ``Signature`` (and the keys in ``skip``) in Java's
    sorted key order, as UTF-8, then ``body``.
    """
    if not ext_fields:
        head = b""
    else:
        # ASCII keys (all of RocketMQ's) sort the same in both orders; skip the key function.
        keys = (
            sorted(ext_fields)
            if all(map(str.isascii, ext_fields))
            else sorted(ext_fields, key=_java_string_order)
        )
        head = "".join([ext_fields[k] for k in keys if k != SIGNATURE and k not in skip]).encode("utf-8")
    return head + bytes(body) if body else head


def cal_signature(data: bytes, secret_key: str) -> str:
    """``AclSigner.calSignature``: base64(HMAC-SHA1(secret key as UTF-8, data))."""
    digest = hmac.digest(secret_key.encode("utf-8"), data, "sha1")
    return base64.b64encode(digest).decode("ascii")


class AclClientRPCHook:
    """Signs every outgoing request with one account (``AclClientRPCHook.doBeforeRequest``).

    Called by :class:`~rocketq.remoting.client.RemotingClient` on each request before it is
    encoded (sync, async and oneway alike).
    """

    __slots__ = ("credentials",)

    def __init__(self, credentials: SessionCredentials) -> None:
        self.credentials = credentials

    def __repr__(self) -> str:
        return f"AclClientRPCHook({self.credentials!r})"

    def __call__(self, request: RemotingCommand) -> None:
        creds = self.credentials
        ext = request.ext_fields
        if ext is None:
            ext = request.ext_fields = {}
        ext[ACCESS_KEY] = creds.access_key
        if creds.security_token is not None:
            ext[SECURITY_TOKEN] = creds.security_token
        content = combine_request_content(ext, request.body)
        ext[SIGNATURE] = cal_signature(content, creds.secret_key)
