"""White-list address patterns of ``plain_acl.yml``.

Mirrors ``RemoteAddressStrategyFactory`` (and its strategies) of Apache RocketMQ 4.9.7:

* blank -> matches nothing (``BlankRemoteAddressStrategy``);
* ``*``, ``*.*.*.*``, ``*:*:*:*:*:*:*:*`` -> matches everything (``NullRemoteAddressStrategy``);
* ``192.168.1.{1,2,3}`` or ``10.0.0.1,10.0.0.2`` -> any of the listed addresses
  (``MultipleRemoteAddressStrategy``);
* ``192.168.0.*``, ``192.168.1-10.*``, ``10.*`` -> the first ``*`` or ``a-b`` part must hold
  the address's part; the parts after it are not looked at (``RangeRemoteAddressStrategy``);
* anything else must be one IPv4 or IPv6 address (``OneRemoteAddressStrategy``).

IPv6 addresses are compared in their expanded form. IPv6 ranges are not supported
(:class:`AclConfigError`), a rocketq limitation.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

from rocketq.errors import IllegalArgumentError

__all__ = ["AclConfigError", "AddressMatcher", "address_matcher"]

#: ``(client ip) -> bool``
AddressMatcher = Callable[[str], bool]


class AclConfigError(IllegalArgumentError):
    """``plain_acl.yml`` (or an address pattern in it) is not valid."""


def _expand(ip: str) -> str | None:
    """The canonical text of an IPv4 address, or the exploded form of an IPv6 one; None if invalid."""
    try:
        addr = ipaddress.ip_address(ip.strip())
    except ValueError:
        return None
    return addr.exploded.upper() if addr.version == 6 else str(addr)


def _valid_ipv4(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).version == 4
    except ValueError:
        return False


def _never(_ip: str) -> bool:
    return False


def _always(_ip: str) -> bool:
    return True


def address_matcher(pattern: str | None) -> AddressMatcher:
    """A matcher for one white-list pattern (``getRemoteAddressStrategy``); raises AclConfigError."""
    if pattern is None or not pattern.strip():
        return _never
    pattern = pattern.strip()
    if pattern in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return _always
    if pattern.endswith("}"):
        head, sep, rest = pattern.rpartition("{")
        if not sep:
            raise AclConfigError(f"address pattern {pattern!r}: '}}' without '{{'")
        return _multiple([head + item.strip() for item in rest[:-1].split(",") if item.strip()], pattern)
    if "," in pattern:
        return _multiple([item for item in pattern.split(",") if item.strip()], pattern)
    if "*" in pattern or "-" in pattern:
        return _range(pattern)
    one = _expand(pattern)
    if one is None:
        raise AclConfigError(f"Netaddress examine Exception netaddress is {pattern}")
    return lambda ip: _expand(ip) == one


def _multiple(items: list[str], pattern: str) -> AddressMatcher:
    allowed: set[str] = set()
    for item in items:
        expanded = _expand(item)
        if expanded is None:
            raise AclConfigError(f"Netaddress examine Exception netaddress is {item} (in {pattern!r})")
        allowed.add(expanded)
    return lambda ip: _expand(ip) in allowed


def _range(pattern: str) -> AddressMatcher:
    if ":" in pattern:
        raise AclConfigError(f"address pattern {pattern!r}: IPv6 ranges are not supported by rocketq")
    parts = [p.strip() for p in pattern.split(".")]
    if len(parts) < 2 or len(parts) > 4:
        raise AclConfigError(f"address pattern {pattern!r} is not an IPv4 range")
    # RangeRemoteAddressStrategy: the first '*' or 'a-b' part among parts 1..3 decides.
    for index in range(1, len(parts)):
        value = parts[index]
        if value == "*":
            start, end = 0, 255
        elif "-" in value:
            low, sep, high = value.partition("-")
            if not low or not sep or not low.isdigit() or not high.isdigit():
                raise AclConfigError(
                    f"RangeRemoteAddressStrategy netaddress examine scope Exception value {value} "
                )
            start, end = int(low), int(high)
            if not (0 <= start <= end <= 255):
                raise AclConfigError(
                    f"RangeRemoteAddressStrategy netaddress examine scope Exception start is {start} , end is {end}"
                )
        else:
            continue
        head = parts[:index]
        if not all(p.isdigit() and 0 <= int(p) <= 255 for p in head):
            raise AclConfigError(f"Netaddress examine scope Exception netaddress is {pattern}")
        return _range_matcher(head, index, start, end)
    raise AclConfigError(f"Netaddress examine scope Exception netaddress is {pattern}")


def _range_matcher(head: list[str], index: int, start: int, end: int) -> AddressMatcher:
    def match(ip: str) -> bool:
        if not _valid_ipv4(ip):
            return False
        parts = ip.split(".")
        return parts[:index] == head and start <= int(parts[index]) <= end

    return match
