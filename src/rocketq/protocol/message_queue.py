"""``MessageQueue``: the (topic, brokerName, queueId) triple that names one queue.

Mirrors ``org.apache.rocketmq.common.message.MessageQueue``: ordering is by topic, then
broker name, then queue id (``compareTo``), which the allocation strategies rely on, and
``str()`` is Java's ``toString()``, which the consistent-hash strategy hashes. On the wire
it is the JSON bean ``{"brokerName":..,"queueId":..,"topic":..}`` (keys alphabetical).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["MessageQueue"]


@dataclass(frozen=True, order=True, slots=True)
class MessageQueue:
    """One queue of a topic on one broker."""

    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"

    def to_json_obj(self) -> dict[str, object]:
        """The fastjson bean form, keys in Java's alphabetical order."""
        return {"brokerName": self.broker_name, "queueId": self.queue_id, "topic": self.topic}

    @classmethod
    def from_json_obj(cls, obj: Mapping[str, object]) -> MessageQueue:
        queue_id = obj.get("queueId", 0)
        return cls(
            topic=str(obj.get("topic", "")),
            broker_name=str(obj.get("brokerName", "")),
            queue_id=int(queue_id) if isinstance(queue_id, (int, str)) else 0,
        )
