"""Transactional messages on the broker (``org.apache.rocketmq.broker.transaction``, 4.9.7).

* :mod:`~rocketq.broker.transaction.bridge`: ``TransactionalMessageBridge`` (half and op
  records in the store, the check's stored progress);
* :mod:`~rocketq.broker.transaction.service`: ``TransactionalMessageServiceImpl`` (the
  END_TRANSACTION lookups, op records, the check scan);
* :mod:`~rocketq.broker.transaction.check_service`: ``TransactionalMessageCheckService`` and
  ``DefaultTransactionalMessageCheckListener`` (ask a producer, or discard).

END_TRANSACTION itself is served by :mod:`rocketq.broker.processors.end_transaction`; the
send processor stores half messages through the bridge.
"""

from __future__ import annotations

from rocketq.broker.transaction.bridge import REMOVETAG, TransactionalMessageBridge
from rocketq.broker.transaction.check_service import (
    DefaultTransactionalMessageCheckListener,
    TransactionalMessageCheckService,
)
from rocketq.broker.transaction.service import TransactionalMessageService

__all__ = [
    "REMOVETAG",
    "DefaultTransactionalMessageCheckListener",
    "TransactionalMessageBridge",
    "TransactionalMessageCheckService",
    "TransactionalMessageService",
]
