"""Retention: deleting expired commit-log segments and the consume-queue/index files that
only point into them, and the "disk full" guard.

Mirrors ``DefaultMessageStore.CleanCommitLogService`` and ``CleanConsumeQueueService``
(4.9.7):

* Segments last modified more than ``file_reserved_time_hours`` ago are deleted during a
  ``delete_when`` hour, or at any hour while disk usage is over
  ``disk_max_used_space_ratio``; over ``disk_space_clean_forcibly_ratio`` they are deleted
  whatever their age (``cleanImmediately``). The last segment is never deleted, at most 10
  per pass (``MappedFileQueue.deleteExpiredFileByTime``).
* Over ``disk_space_warning_level_ratio`` the disk is marked full and puts are refused
  (``RunningFlags.getAndMakeDiskFull``) until usage is back under
  ``disk_space_clean_forcibly_ratio`` (``getAndMakeDiskOK``).
* When the commit log's minimum offset moved, consume-queue files whose units all point
  below it are deleted, each queue's minimum is corrected, and so are index files.

Disk usage comes from an injected ``disk_usage(path) -> fraction`` so tests can simulate
a full disk. Segment age uses the store clock (in-process appends) or the file mtime.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Iterable

from rocketq.broker.store.commit_log import CommitLog
from rocketq.broker.store.config import MessageStoreConfig
from rocketq.broker.store.consume_queue import ConsumeQueue
from rocketq.broker.store.index import IndexService

__all__ = ["CleanCommitLogService", "CleanConsumeQueueService", "default_disk_usage"]

_log = logging.getLogger("rocketq.broker.store")


def default_disk_usage(path: str) -> float:
    """``UtilAll.getDiskPartitionSpaceUsedPercent``: used fraction (0..1) of the partition
    holding ``path``; -1 when it cannot be measured."""
    try:
        usage = shutil.disk_usage(path)
    except OSError:
        return -1.0
    if usage.total <= 0:
        return -1.0
    return (usage.total - usage.free) / usage.total


class CleanCommitLogService:
    """Commit-log retention and the disk-full flag (``CleanCommitLogService``)."""

    def __init__(
        self, config: MessageStoreConfig, commit_log: CommitLog, disk_usage: Callable[[str], float]
    ) -> None:
        self._config = config
        self._commit_log = commit_log
        self._disk_usage = disk_usage
        #: True while puts must be refused (``RunningFlags`` DISK_FULL bit).
        self.disk_full = False

    def update_config(self, config: MessageStoreConfig) -> None:
        """Read ``config`` from the next pass on (updateBrokerConfig: retention and disk ratios)."""
        self._config = config

    def run(self, now_ms: int) -> int:
        """One pass (``deleteExpiredFiles``); returns the number of segments deleted."""
        config = self._config
        time_up = time.localtime(now_ms / 1000).tm_hour in config.delete_hours()
        usage, clean_now = self.check_disk()
        # isSpaceToDelete: an unmeasurable disk (-1) counts as full
        space_full = usage < 0 or usage > config.disk_max_used_space_ratio / 100
        if not (time_up or space_full):
            return 0
        deleted = self._commit_log.delete_expired_files(
            config.file_reserved_time_hours * 3_600_000,
            now_ms,
            clean_now and config.clean_file_forcibly_enable,
        )
        if deleted:
            self.check_disk()
        return deleted

    def check_disk(self) -> tuple[float, bool]:
        """Measure usage, update ``disk_full``; returns (usage, clean immediately)."""
        config = self._config
        usage = self._disk_usage(config.commit_log_dir)
        if usage > config.disk_space_warning_level_ratio / 100:
            if not self.disk_full:
                _log.error("disk usage %.1f%% over the warning level: refusing puts", usage * 100)
            self.disk_full = True
            return usage, True
        if usage > config.disk_space_clean_forcibly_ratio / 100:
            return usage, True
        if self.disk_full:
            _log.info("disk usage %.1f%%: accepting puts again", usage * 100)
        self.disk_full = False
        return usage, False


class CleanConsumeQueueService:
    """Consume-queue and index retention (``CleanConsumeQueueService``)."""

    def __init__(
        self,
        commit_log: CommitLog,
        consume_queues: Callable[[], Iterable[ConsumeQueue]],
        index_service: IndexService,
    ) -> None:
        self._commit_log = commit_log
        self._consume_queues = consume_queues
        self._index_service = index_service
        self.last_physical_min_offset = 0

    def run(self) -> None:
        min_phy = self._commit_log.min_offset()
        if min_phy <= self.last_physical_min_offset:
            return
        self.last_physical_min_offset = min_phy
        for cq in list(self._consume_queues()):
            cq.delete_expired_file(min_phy)
        self._index_service.delete_expired_file(min_phy)
