"""A transactional producer that dies between its half message and END_TRANSACTION.

usage: python transaction_producer_proc.py NAMESRV TOPIC GROUP BODY

Sends BODY in a transaction; the local transaction prints ``HALF <msg id>`` and ends the
process at once (``os._exit``), so the broker holds a half message that only a check can
resolve.
"""

from __future__ import annotations

import os
import sys

from rocketq.client import LocalTransactionState, Message, MessageExt, TransactionProducer


class _DieInTheMiddle:
    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        print("HALF", msg.properties.get("UNIQ_KEY"), flush=True)
        os._exit(17)

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW


def main() -> int:
    namesrv, topic, group, body = sys.argv[1:5]
    producer = TransactionProducer(group, namesrv_addr=namesrv, transaction_listener=_DieInTheMiddle())
    producer.start()
    producer.send_message_in_transaction(Message(topic, body.encode()))
    return 1  # never reached: the listener ends the process


if __name__ == "__main__":
    sys.exit(main())
