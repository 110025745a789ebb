"""``plain_acl.yml``: where it is, how it reads, and the accounts it holds.

Mirrors the loading half of ``PlainPermissionManager`` (``load``,
``buildPlainAccessResource``, ``checkPlainAccessConfig``) and ``Permission.parseResourcePerms``
of Apache RocketMQ 4.9.7.

Where: ``$ROCKETMQ_HOME/conf/plain_acl.yml`` by default; Java's ``-Drocketmq.acl.plain.file``
(a path *relative to* ROCKETMQ_HOME) is the broker/name-server option ``aclPlainFile``
(``--set aclPlainFile=...``), which rocketq also accepts as an absolute path. As in Java
4.9.7, every ``*.yml``/``*.yaml`` below ``$ROCKETMQ_HOME/conf/acl`` is read too
(:func:`acl_files`, :func:`merge_plain_acl`): the directory's files first (in name order;
Java's is the file system's), then the main file; an access key keeps its first definition
and the global white lists add up.

Format (the sample ``distribution/conf/plain_acl.yml``): ``globalWhiteRemoteAddresses``
(a list of address patterns) and ``accounts`` (a list of maps with ``accessKey``,
``secretKey``, ``whiteRemoteAddress``, ``admin``, ``defaultTopicPerm``, ``defaultGroupPerm``,
``topicPerms`` and ``groupPerms``, the last two lists of ``resource=PERM``). Group names
are stored as their retry topics (``%RETRY%group``), as Java does. Scalars are taken as text
(``secretKey: 12345678`` is the string ``"12345678"``, as fastjson converts it). An
access key defined twice keeps its first definition (Java logs and skips the repeat).

YAML needs PyYAML (``pip install 'rocketq[acl]'``); it is imported only when a file is
loaded, so servers without ACL never need it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from rocketq.acl.permission import DENY, parse_perm, valid_perm_text
from rocketq.acl.remote_address import AclConfigError, AddressMatcher, address_matcher
from rocketq.protocol.mixall import retry_topic

__all__ = [
    "DEFAULT_ACL_DIR",
    "DEFAULT_ACL_FILE",
    "PlainAccessConfig",
    "PlainAclData",
    "acl_files",
    "load_plain_acl",
    "merge_plain_acl",
    "parse_plain_acl",
    "resolve_acl_dir",
    "resolve_acl_file",
]

#: ``PlainPermissionManager.defaultAclFile`` below ROCKETMQ_HOME.
DEFAULT_ACL_FILE: Final = "conf/plain_acl.yml"
#: ``PlainPermissionManager.defaultAclDir`` below ROCKETMQ_HOME.
DEFAULT_ACL_DIR: Final = "conf/acl"
#: ``AclConstants.ACCESS_KEY_MIN_LENGTH`` / ``SECRET_KEY_MIN_LENGTH``: keys must be longer.
_KEY_MIN_LENGTH: Final = 6


@dataclass(frozen=True)
class PlainAccessConfig:
    """One account (``PlainAccessResource`` as built by ``buildPlainAccessResource``)."""

    access_key: str
    secret_key: str = field(repr=False)
    white_remote_address: str | None
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    #: topic (or ``%RETRY%group``) -> permission bits
    resource_perms: Mapping[str, int]
    white_matcher: AddressMatcher = field(repr=False, compare=False)


@dataclass(frozen=True)
class PlainAclData:
    """Everything one ``plain_acl.yml`` says."""

    global_white: tuple[AddressMatcher, ...] = ()
    global_white_patterns: tuple[str, ...] = ()
    accounts: Mapping[str, PlainAccessConfig] = field(default_factory=dict)


def resolve_acl_file(option: str | None, rocketmq_home: str | None = None) -> Path:
    """The file the servers read: ``option`` (absolute, or relative to ROCKETMQ_HOME) or
    ``$ROCKETMQ_HOME/conf/plain_acl.yml``; raises AclConfigError when neither can be found."""
    home = rocketmq_home if rocketmq_home is not None else os.environ.get("ROCKETMQ_HOME")
    if option and os.path.isabs(option):
        return Path(option)
    if not home:
        raise AclConfigError(
            "aclEnable=true needs plain_acl.yml: set ROCKETMQ_HOME (the file is then "
            f"$ROCKETMQ_HOME/{DEFAULT_ACL_FILE}) or aclPlainFile=/absolute/path/plain_acl.yml"
        )
    return Path(home) / (option or DEFAULT_ACL_FILE)


def resolve_acl_dir(rocketmq_home: str | None = None) -> Path | None:
    """``$ROCKETMQ_HOME/conf/acl`` (more ACL files), or None without ROCKETMQ_HOME."""
    home = rocketmq_home if rocketmq_home is not None else os.environ.get("ROCKETMQ_HOME")
    return Path(home) / DEFAULT_ACL_DIR if home else None


def acl_files(main: Path, acl_dir: Path | None) -> list[Path]:
    """``PlainPermissionManager.getAllAclFiles`` + the main file: what is loaded, in order."""
    files: list[Path] = []
    if acl_dir is not None and acl_dir.is_dir():
        files = sorted(p for p in acl_dir.rglob("*") if p.is_file() and p.suffix in (".yml", ".yaml"))
    if main.exists() and main not in files:
        files.append(main)
    return files


def merge_plain_acl(parts: list[PlainAclData]) -> PlainAclData:
    """Several files as one: first definition of an access key wins, white lists add up."""
    if len(parts) == 1:
        return parts[0]
    accounts: dict[str, PlainAccessConfig] = {}
    for part in parts:
        for key, account in part.accounts.items():
            accounts.setdefault(key, account)
    return PlainAclData(
        global_white=tuple(m for part in parts for m in part.global_white),
        global_white_patterns=tuple(p for part in parts for p in part.global_white_patterns),
        accounts=accounts,
    )


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _bool(value: object, where: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise AclConfigError(f"{where}: admin must be true or false, got {value!r}")


def _perm_list(value: object, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AclConfigError(f"{where} must be a list of 'resource=PERM', got {value!r}")
    return [str(item) for item in value if item is not None]


def _add_resource_perms(out: dict[str, int], items: list[str], *, is_topic: bool, where: str) -> None:
    # Permission.checkResourcePerms + parseResourcePerms
    for item in items:
        pieces = [p for p in item.split("=") if p]
        if len(pieces) != 2:
            raise AclConfigError(
                f"{where}: Parse Resource format error for {item}. "
                "The expected resource format is 'Res=Perm'. For example: topicA=SUB"
            )
        resource, perm = pieces[0].strip(), pieces[1].strip()
        if not valid_perm_text(perm):
            raise AclConfigError(
                f"{where}: Parse resource permission error for {item}. "
                "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."
            )
        out[resource if is_topic else retry_topic(resource)] = parse_perm(perm)


def _account(raw: object, index: int) -> PlainAccessConfig:
    where = f"accounts[{index}]"
    if not isinstance(raw, dict):
        raise AclConfigError(f"{where} must be a map, got {raw!r}")
    access_key = _text(raw.get("accessKey"))
    secret_key = _text(raw.get("secretKey"))
    if (
        access_key is None
        or secret_key is None
        or len(access_key) <= _KEY_MIN_LENGTH
        or len(secret_key) <= _KEY_MIN_LENGTH
    ):
        # PlainPermissionManager.checkPlainAccessConfig (the secret itself is not echoed)
        raise AclConfigError(
            f"{where}: The accessKey={access_key} and secretKey cannot be null and length should longer than 6"
        )
    where = f"{where} ({access_key})"
    resources: dict[str, int] = {}
    _add_resource_perms(
        resources, _perm_list(raw.get("groupPerms"), f"{where}.groupPerms"), is_topic=False, where=where
    )
    _add_resource_perms(
        resources, _perm_list(raw.get("topicPerms"), f"{where}.topicPerms"), is_topic=True, where=where
    )
    white = _text(raw.get("whiteRemoteAddress"))
    default_topic = _text(raw.get("defaultTopicPerm"))
    default_group = _text(raw.get("defaultGroupPerm"))
    return PlainAccessConfig(
        access_key=access_key,
        secret_key=secret_key,
        white_remote_address=white,
        admin=_bool(raw.get("admin"), where),
        default_topic_perm=DENY if default_topic is None else parse_perm(default_topic),
        default_group_perm=DENY if default_group is None else parse_perm(default_group),
        resource_perms=resources,
        white_matcher=address_matcher(white),
    )


def parse_plain_acl(data: object) -> PlainAclData:
    """Build the accounts from the parsed YAML document (a map, or None for an empty file)."""
    if data is None:
        return PlainAclData()
    if not isinstance(data, dict):
        raise AclConfigError(f"plain_acl.yml must hold a map at the top, got {type(data).__name__}")
    patterns = [str(p) for p in (data.get("globalWhiteRemoteAddresses") or []) if p is not None]
    matchers = tuple(address_matcher(p) for p in patterns)
    accounts: dict[str, PlainAccessConfig] = {}
    raw_accounts = data.get("accounts") or []
    if not isinstance(raw_accounts, list):
        raise AclConfigError("plain_acl.yml: accounts must be a list")
    for index, raw in enumerate(raw_accounts):
        account = _account(raw, index)
        # PlainPermissionManager.load: an access key defined twice keeps the first one.
        accounts.setdefault(account.access_key, account)
    return PlainAclData(global_white=matchers, global_white_patterns=tuple(patterns), accounts=accounts)


def load_plain_acl(path: str | os.PathLike[str]) -> PlainAclData:
    """Read and parse one ``plain_acl.yml``; a missing file holds nothing (as in Java).

    Raises AclConfigError for bad content, or when PyYAML is not installed.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return PlainAclData()
    try:
        import yaml
    except ImportError as exc:
        raise AclConfigError(
            "aclEnable=true needs PyYAML to read plain_acl.yml: pip install 'rocketq[acl]' (or pyyaml)"
        ) from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AclConfigError(f"{path}: not valid YAML: {exc}") from exc
    try:
        return parse_plain_acl(data)
    except AclConfigError as exc:
        raise AclConfigError(f"{path}: {exc}") from exc
