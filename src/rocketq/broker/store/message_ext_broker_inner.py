"""``MessageExtBrokerInner``: a message as the broker hands it to the store.

Mirrors ``org.apache.rocketmq.store.MessageExtBrokerInner`` (4.9.7): the fields the
commit log writes, the properties both as a dict and as the stored property string, and
the consume-queue ``tagsCode``.

Invariants: ``properties`` and ``properties_string`` always describe the same properties.
Either may be given; the other is derived on first access (the string in Java
``HashMap`` order, as ``MessageDecoder.messageProperties2String`` writes it). A broker
that received the string on the wire should pass it as ``properties_string`` so the
record keeps the producer's exact bytes. Change properties through ``put_property`` /
``remove_property`` (or assign ``properties``): mutating the dict returned by
``properties`` in place does not refresh a cached string. ``tags_code`` defaults to the
Java ``String.hashCode`` of TAGS (0 without a tag).
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketq.protocol.message import MessageConst, decode_properties, encode_properties, tags_code
from rocketq.protocol.message_id import HostAddr

__all__ = ["MessageExtBatch", "MessageExtBrokerInner"]


def delay_time_level(properties: Mapping[str, str]) -> int:
    """``Message.getDelayTimeLevel``: property DELAY, 0 when absent or not a number."""
    raw = properties.get(MessageConst.DELAY)
    if not raw:
        return 0
    try:
        return int(raw)
    except ValueError:
        return 0


def wait_store_msg_ok(properties: Mapping[str, str]) -> bool:
    """``Message.isWaitStoreMsgOK``: property WAIT, absent means True."""
    raw = properties.get(MessageConst.WAIT)
    return raw is None or raw.lower() == "true"


class MessageExtBrokerInner:
    """One message to store (``MessageExtBrokerInner``)."""

    __slots__ = (
        "_props",
        "_props_str",
        "_tags_code",
        "body",
        "born_host",
        "born_timestamp",
        "flag",
        "prepared_transaction_offset",
        "queue_id",
        "reconsume_times",
        "store_host",
        "sys_flag",
        "topic",
    )

    def __init__(
        self,
        *,
        topic: str,
        queue_id: int,
        body: bytes,
        born_host: HostAddr,
        store_host: HostAddr,
        flag: int = 0,
        properties: Mapping[str, str] | None = None,
        properties_string: str | None = None,
        tags_code: int | None = None,
        sys_flag: int = 0,
        born_timestamp: int = 0,
        reconsume_times: int = 0,
        prepared_transaction_offset: int = 0,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.body = body
        self.born_host = born_host
        self.store_host = store_host
        self.flag = flag
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.reconsume_times = reconsume_times
        self.prepared_transaction_offset = prepared_transaction_offset
        if properties is None and properties_string is None:
            properties = {}
        self._props: dict[str, str] | None = dict(properties) if properties is not None else None
        self._props_str = properties_string
        self._tags_code = tags_code

    # -- properties ---------------------------------------------------------------------

    @property
    def properties(self) -> dict[str, str]:
        """The properties as a dict (parsed from ``properties_string`` on first access)."""
        props = self._props
        if props is None:
            props = self._props = decode_properties(self._props_str or "")
        return props

    @properties.setter
    def properties(self, value: Mapping[str, str]) -> None:
        self._props = dict(value)
        self._props_str = None
        self._tags_code = None

    @property
    def properties_string(self) -> str:
        """The stored property string (``MessageDecoder.messageProperties2String``)."""
        s = self._props_str
        if s is None:
            s = self._props_str = encode_properties(self.properties, java_order=True)
        return s

    @properties_string.setter
    def properties_string(self, value: str) -> None:
        self._props_str = value
        self._props = None
        self._tags_code = None

    def get_property(self, name: str) -> str | None:
        return self.properties.get(name)

    def put_property(self, name: str, value: str) -> None:
        """``MessageAccessor.putProperty``; the property string is rebuilt on next use."""
        self.properties[name] = value
        self._props_str = None
        if name == MessageConst.TAGS:
            self._tags_code = None

    def remove_property(self, name: str) -> None:
        """``MessageAccessor.clearProperty``."""
        if self.properties.pop(name, None) is not None:
            self._props_str = None
            if name == MessageConst.TAGS:
                self._tags_code = None

    # -- derived values -----------------------------------------------------------------

    @property
    def tags_code(self) -> int:
        """Consume-queue tagsCode: explicit value, else ``String.hashCode`` of TAGS."""
        code = self._tags_code
        if code is None:
            code = self._tags_code = tags_code(self.properties.get(MessageConst.TAGS))
        return code

    @tags_code.setter
    def tags_code(self, value: int) -> None:
        self._tags_code = value

    @property
    def delay_time_level(self) -> int:
        """``Message.getDelayTimeLevel``: see :func:`delay_time_level`."""
        return delay_time_level(self.properties)

    @property
    def wait_store_msg_ok(self) -> bool:
        """``Message.isWaitStoreMsgOK``: see :func:`wait_store_msg_ok`."""
        return wait_store_msg_ok(self.properties)

    def __repr__(self) -> str:
        return (
            f"MessageExtBrokerInner(topic={self.topic!r}, queue_id={self.queue_id}, "
            f"body=<{len(self.body)} bytes>, properties={self.properties!r})"
        )


class MessageExtBatch:
    """A SEND_BATCH_MESSAGE as the broker hands it to the store (``MessageExtBatch``): the
    encoded body of all its messages and what they share, for
    :meth:`MessageStore.put_batch`, which encodes the records straight from the body
    (``CommitLog.MessageExtBatchEncoder``) without a message object per entry.

    ``properties`` are the batch's own (from the request header, CLUSTER set by the
    broker): every record stores its entry's property string followed by
    ``properties_string``, and its properties as a map are the entry's updated with these.
    ``msgs`` and ``body_size`` (the sum of the entries' bodies) are set by the put once the
    body is parsed.
    """

    __slots__ = (
        "body",
        "body_size",
        "born_host",
        "born_timestamp",
        "msgs",
        "properties",
        "properties_string",
        "queue_id",
        "reconsume_times",
        "store_host",
        "sys_flag",
        "topic",
    )

    def __init__(
        self,
        *,
        topic: str,
        queue_id: int,
        body: bytes,
        born_host: HostAddr,
        store_host: HostAddr,
        properties: dict[str, str],
        sys_flag: int = 0,
        born_timestamp: int = 0,
        reconsume_times: int = 0,
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.body = body
        self.born_host = born_host
        self.store_host = store_host
        self.properties = properties
        self.properties_string = encode_properties(properties, java_order=True)
        self.sys_flag = sys_flag
        self.born_timestamp = born_timestamp
        self.reconsume_times = reconsume_times
        self.msgs = 0
        self.body_size = 0
