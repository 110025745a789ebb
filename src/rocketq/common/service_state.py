"""The life cycle of a producer or consumer: its state and the ``with`` protocol.

Mirrors ``org.apache.rocketmq.common.ServiceState`` (CREATE_JUST -> RUNNING ->
SHUTDOWN_ALREADY, or START_FAILED) and gives every client role the same context-manager
behaviour (:class:`ServiceLifecycle`). Invariant: a service starts only from CREATE_JUST;
leaving a ``with`` block always shuts the service down, also on an exception.
"""

from __future__ import annotations

import enum
from types import TracebackType
from typing import Protocol, TypeVar

from rocketq.errors import ClientError

__all__ = ["ServiceLifecycle", "ServiceState"]


class ServiceState(enum.Enum):
    """``org.apache.rocketmq.common.ServiceState``: the life cycle of a producer or consumer."""

    CREATE_JUST = "CREATE_JUST"
    RUNNING = "RUNNING"
    SHUTDOWN_ALREADY = "SHUTDOWN_ALREADY"
    START_FAILED = "START_FAILED"

    def check_startable(self, service: str) -> None:
        """Raise the Java client's "service state not OK" error unless this is CREATE_JUST."""
        if self is not ServiceState.CREATE_JUST:
            raise ClientError(f"the {service} service state not OK, maybe started once, {self.name}")


class _Service(Protocol):
    def start(self) -> None: ...

    def shutdown(self) -> None: ...


_S = TypeVar("_S", bound=_Service)


class ServiceLifecycle:
    """The context-manager side of a producer's or consumer's life cycle: ``with`` starts the
    service (:meth:`start`) and shuts it down (:meth:`shutdown`) when the block ends, also on
    an exception (which is not suppressed)."""

    def __enter__(self: _S) -> _S:
        self.start()
        return self

    def __exit__(
        self: _Service,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()
