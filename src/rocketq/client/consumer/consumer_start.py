"""The start sequence every consumer shares (push, pull, lite pull).

Mirrors the common part of ``DefaultMQPushConsumerImpl.start``,
``DefaultMQPullConsumerImpl.start`` and ``DefaultLitePullConsumerImpl.start`` (4.9.7): the
instance name, the shared :class:`~rocketq.client.instance.MQClientInstance`, the offset store
by message model, and registration with rollback. Invariant: a consumer that failed to start
is not left registered in its client instance.
"""

from __future__ import annotations

import dataclasses

from rocketq.client.config import ClientConfig, change_instance_name_to_pid
from rocketq.client.consumer.offset_store import LocalFileOffsetStore, OffsetStore, RemoteBrokerOffsetStore
from rocketq.client.instance import MQClientInstance, MQClientManager, MQConsumerInner
from rocketq.errors import ClientError
from rocketq.protocol.heartbeat import MessageModel

__all__ = ["register_and_start", "start_consumer_instance"]


def start_consumer_instance(
    manager: MQClientManager,
    client_config: ClientConfig,
    group: str,
    message_model: MessageModel,
    offset_store_dir: str | None,
) -> tuple[ClientConfig, MQClientInstance, OffsetStore]:
    """The start sequence every consumer shares (``DefaultMQ*ConsumerImpl.start``).

    CLUSTERING consumers replace the ``DEFAULT`` instance name with ``<pid>#<ns>`` (Java
    4.9); the shared client instance is fetched or created; the offset store is created and
    loaded: a local file for BROADCASTING, the broker otherwise.
    """
    if message_model is MessageModel.CLUSTERING:
        client_config = dataclasses.replace(
            client_config, instance_name=change_instance_name_to_pid(client_config.instance_name)
        )
    instance = manager.get_or_create_instance(client_config)
    store: OffsetStore
    if message_model is MessageModel.BROADCASTING:
        store = LocalFileOffsetStore(instance.client_id, group, store_dir=offset_store_dir)
    else:
        store = RemoteBrokerOffsetStore(instance, group)
    store.load()
    return client_config, instance, store


def register_and_start(instance: MQClientInstance, group: str, consumer: MQConsumerInner) -> None:
    """Register ``consumer`` under ``group`` and start the shared instance (rolled back on failure).

    Raises ClientError when the group is already registered in this client instance.
    """
    if not instance.register_consumer(group, consumer):
        raise ClientError(f"The consumer group[{group}] has been created before, specify another name")
    try:
        instance.start()
    except BaseException:
        instance.unregister_consumer(group)
        instance.shutdown()
        raise
