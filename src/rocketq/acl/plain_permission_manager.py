"""Owns one server's ACL: the file, the loaded data, the validator, and the reload watch.

Mirrors ``PlainPermissionManager``'s lifecycle (``load`` + ``watch``) and ``FileWatchService``
of Apache RocketMQ 4.9.7: the file's digest is compared every 500 ms and a change reloads it,
so editing ``plain_acl.yml`` takes effect without a restart.

Invariants: :meth:`PlainPermissionManager.start` fails (AclConfigError) when the file does
not parse; a reload that fails keeps the previous accounts and logs the error, so a typo in
a running cluster's file never opens the server up nor locks everyone out; the watch thread
(``AclFileWatchService``) ends with :meth:`PlainPermissionManager.shutdown`.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Final

from rocketq.acl.plain_access_validator import CodeRule, PlainAccessValidator, broker_rule
from rocketq.acl.plain_acl_config import PlainAclData, acl_files, load_plain_acl, merge_plain_acl
from rocketq.acl.remote_address import AclConfigError
from rocketq.common.service_thread import ServiceThread

__all__ = ["PlainPermissionManager"]

log = logging.getLogger(__name__)

#: ``FileWatchService.WATCH_INTERVAL``
WATCH_INTERVAL_S: Final = 0.5


def _digest(files: list[Path]) -> bytes:
    h = hashlib.sha256()
    for path in files:
        h.update(str(path).encode() + b"\0")
        try:
            h.update(path.read_bytes())
        except FileNotFoundError:
            h.update(b"\1missing")
        h.update(b"\0")
    return h.digest()


class _AclFileWatchService(ServiceThread):
    def __init__(self, manager: PlainPermissionManager, interval_s: float) -> None:
        super().__init__("AclFileWatchService", interval_s=interval_s)
        self._manager = manager

    def run_once(self) -> None:
        self._manager.reload_if_changed()


class PlainPermissionManager:
    """Loads ``path`` (and the files of ``acl_dir``), serves :attr:`validator`, reloads on
    change (``PlainPermissionManager``)."""

    def __init__(
        self,
        path: str | Path,
        *,
        acl_dir: str | Path | None = None,
        rule: Callable[[int], CodeRule] = broker_rule,
        watch_interval_s: float = WATCH_INTERVAL_S,
    ) -> None:
        self.path = Path(path)
        self.acl_dir = None if acl_dir is None else Path(acl_dir)
        files = acl_files(self.path, self.acl_dir)
        self._digest = _digest(files)
        # First load: errors propagate (the server must not start with a broken ACL).
        self.validator = PlainAccessValidator(self._load(files), rule=rule)
        self._watch = _AclFileWatchService(self, watch_interval_s)
        self.reloads = 0
        if not files:
            log.warning("ACL enabled but %s does not exist: only globally white addresses get in", self.path)
        else:
            log.info(
                "ACL: loaded %d accounts from %s",
                len(self.validator.data.accounts),
                ", ".join(map(str, files)),
            )

    @staticmethod
    def _load(files: list[Path]) -> PlainAclData:
        return merge_plain_acl([load_plain_acl(f) for f in files]) if files else PlainAclData()

    def start(self) -> None:
        """Start watching the file."""
        self._watch.start()

    def shutdown(self) -> None:
        """Stop watching (joins the thread)."""
        self._watch.shutdown()

    def reload_if_changed(self) -> bool:
        """Reload when a file changed, appeared or went away; True if new data is in use."""
        files = acl_files(self.path, self.acl_dir)
        digest = _digest(files)
        if digest == self._digest:
            return False
        self._digest = digest
        try:
            data = self._load(files)
        except AclConfigError as exc:
            log.error("ACL: %s changed but does not load, keeping the previous accounts: %s", self.path, exc)
            return False
        self.validator.update(data)
        self.reloads += 1
        log.info("ACL: reloaded %s (%d accounts)", self.path, len(data.accounts))
        return True
