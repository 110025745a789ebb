"""Wallet events for the demo: generation, JSON bodies and the notifier's order check.

Pure (no I/O). Each user has a sequence of events (``seq`` 0, 1, 2, ...), deposits and
purchases, each carrying the balance after it; the balance never depends on anything but
the user's own earlier events, so the final balance per user is known up front and any
consumer that sees a user's events in order can tell the balance the user was shown.

Invariant checked by :class:`OrderChecker`: a user is never notified of an older balance
(lower ``seq``) after a newer one, the property the seeds' SMS notifier needs from
orderly consumption (``MessageListenerOrderly`` + ``SelectMessageQueueByHash``).
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass

__all__ = ["OrderChecker", "WalletEvent", "generate_events"]


@dataclass(frozen=True)
class WalletEvent:
    """One wallet event; ``balance`` is the balance after it (cents)."""

    user: str
    seq: int
    kind: str  # "deposit" or "purchase"
    amount: int
    balance: int
    ts_ms: int

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "user": self.user,
                "seq": self.seq,
                "type": self.kind,
                "amount": self.amount,
                "balance": self.balance,
                "ts": self.ts_ms,
            },
            separators=(",", ":"),
        ).encode()

    @staticmethod
    def from_json(body: bytes) -> WalletEvent:
        d = json.loads(body)
        return WalletEvent(d["user"], d["seq"], d["type"], d["amount"], d["balance"], d["ts"])


def generate_events(
    users: int, events_per_user: int, *, seed: int = 7, start_ms: int = 0
) -> list[WalletEvent]:
    """``users`` x about ``events_per_user`` events, interleaved across users (seeded).

    Each user gets ``events_per_user`` +/- 25 % events. Purchases may overdraw the wallet
    (a negative balance), which is what the alert job looks for.
    """
    rng = random.Random(seed)
    queues: list[list[WalletEvent]] = []
    for u in range(users):
        user = f"user-{u:04d}"
        n = max(1, events_per_user + rng.randint(-events_per_user // 4, events_per_user // 4))
        balance = 0
        items = []
        for seq in range(n):
            if seq == 0 or rng.random() < 0.45:
                kind, amount = "deposit", rng.randint(1, 200) * 100
                balance += amount
            else:
                kind, amount = "purchase", rng.randint(1, 150) * 100
                balance -= amount
            items.append(WalletEvent(user, seq, kind, amount, balance, start_ms))
        queues.append(items)
    out: list[WalletEvent] = []
    cursors = [0] * users
    live = list(range(users))
    tick = 0
    while live:
        u = rng.choice(live)
        e = queues[u][cursors[u]]
        out.append(WalletEvent(e.user, e.seq, e.kind, e.amount, e.balance, start_ms + tick))
        tick += 7
        cursors[u] += 1
        if cursors[u] == len(queues[u]):
            live.remove(u)
    return out


class OrderChecker:
    """Thread-safe record of what each user was notified of, in delivery order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.last_seq: dict[str, int] = {}
        self.balance: dict[str, int] = {}
        self.violations = 0
        self.notified = 0

    def observe(self, event: WalletEvent) -> bool:
        """Record one notification; False for a replay, and a violation when it is older
        than one the user has already seen."""
        with self._lock:
            self.notified += 1
            last = self.last_seq.get(event.user, -1)
            if event.seq <= last:
                if event.seq < last:
                    self.violations += 1
                return False
            self.last_seq[event.user] = event.seq
            self.balance[event.user] = event.balance
            return True
