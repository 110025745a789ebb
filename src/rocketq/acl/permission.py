"""Permission bits, their text form, and which request codes need an admin account.

Mirrors ``org.apache.rocketmq.acl.common.Permission`` (and ``AclConstants``'s permission
strings) of Apache RocketMQ 4.9.7.

Text to bits (``parsePermFromString``): ``PUB``, ``SUB``, ``PUB|SUB`` / ``SUB|PUB``,
``DENY``; anything else (or nothing) is DENY. :func:`check_permission` is Java's
``checkPermission``: an owned DENY refuses everything, a needed ANY is satisfied by PUB or
SUB, otherwise the needed bit must be owned.

:data:`JAVA_ADMIN_CODES` is Java's ``Permission.ADMIN_CODE``. rocketq's broker is stricter
(:data:`ADMIN_CODES`): every request that changes broker state outside the message flow
(offset reset, ACL edits, group offset cloning, file deletion, ...) needs an admin account
too, so an ordinary account cannot reset another group's offsets.
"""

from __future__ import annotations

from typing import Final

from rocketq.protocol.codes import RequestCode

__all__ = [
    "ADMIN_CODES",
    "ANY",
    "DENY",
    "JAVA_ADMIN_CODES",
    "PUB",
    "SUB",
    "check_permission",
    "need_admin_perm",
    "parse_perm",
    "valid_perm_text",
]

#: ``Permission.DENY``
DENY: Final = 1
#: ``Permission.ANY``
ANY: Final = 1 << 1
#: ``Permission.PUB``
PUB: Final = 1 << 2
#: ``Permission.SUB``
SUB: Final = 1 << 3

_PERM_TEXT: Final[dict[str, int]] = {
    "PUB": PUB,
    "SUB": SUB,
    "PUB|SUB": PUB | SUB,
    "SUB|PUB": PUB | SUB,
    "DENY": DENY,
}

#: ``Permission.ADMIN_CODE`` of Java 4.9.7.
JAVA_ADMIN_CODES: Final = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
    }
)

#: The request codes rocketq's broker answers only for admin accounts (Java's five, plus
#: every other state-changing administrative request).
ADMIN_CODES: Final = JAVA_ADMIN_CODES | frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_TOPIC_LIST,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.RESET_CONSUMER_OFFSET_IN_BROKER,
        RequestCode.CLONE_GROUP_OFFSET,
        RequestCode.TRIGGER_DELETE_FILES,
        RequestCode.DELETE_EXPIRED_COMMITLOG,
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
        RequestCode.CLEAN_UNUSED_TOPIC,
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
        RequestCode.DELETE_ACL_CONFIG,
        RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
        RequestCode.GET_BROKER_CLUSTER_ACL_INFO,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
        # makes a consumer consume a stored message again (a side effect in the consumer)
        RequestCode.CONSUME_MESSAGE_DIRECTLY,
    }
)


def parse_perm(text: str | None) -> int:
    """``Permission.parsePermFromString``: unknown or missing text is DENY."""
    if text is None:
        return DENY
    return _PERM_TEXT.get(text.strip(), DENY)


def valid_perm_text(text: str) -> bool:
    """Whether ``text`` is one of the permission words (``checkResourcePerms``)."""
    return text.strip() in _PERM_TEXT


def check_permission(needed: int, owned: int) -> bool:
    """``Permission.checkPermission``."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)


def need_admin_perm(code: int) -> bool:
    """Whether ``code`` needs an admin account on rocketq's broker."""
    return code in ADMIN_CODES
