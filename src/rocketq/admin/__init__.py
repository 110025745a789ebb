"""The admin API of rocketq (``DefaultMQAdminExt``): topics, groups, offsets, messages.

Everything the ``rocketq topic|group|message|cluster`` commands do is available here as
typed methods of one class, :class:`Admin` (a context manager), returning the models of
:mod:`rocketq.admin.models`. See :mod:`rocketq.admin.admin` for the threading model.
"""

from rocketq.admin.admin import DEFAULT_TIMEOUT_MS, Admin, ProgressCallback
from rocketq.admin.groups import GroupSummary
from rocketq.admin.models import (
    BrokerSummary,
    ClientConnection,
    ClusterView,
    ConsumerProgress,
    GroupConnections,
    MessageTrack,
    QueueProgress,
    QueueReset,
    QueueStatus,
    ResendMethod,
    ResendResult,
    ResetMode,
    ResetOffsetResult,
    TopicGroupStats,
    TopicStatus,
    TrackType,
    message_to_json,
)
from rocketq.admin.trace import ConsumeAttempt, MessageTrace

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "Admin",
    "BrokerSummary",
    "ClientConnection",
    "ClusterView",
    "ConsumeAttempt",
    "ConsumerProgress",
    "GroupConnections",
    "GroupSummary",
    "MessageTrace",
    "MessageTrack",
    "ProgressCallback",
    "QueueProgress",
    "QueueReset",
    "QueueStatus",
    "ResendMethod",
    "ResendResult",
    "ResetMode",
    "ResetOffsetResult",
    "TopicGroupStats",
    "TopicStatus",
    "TrackType",
    "message_to_json",
]
