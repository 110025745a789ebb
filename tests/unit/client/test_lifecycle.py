"""The producers' and consumers' life cycle: ServiceState and the ``with`` protocol."""

from __future__ import annotations

import pytest

from rocketq.client.consumer.lite_pull import LitePullConsumer
from rocketq.client.consumer.pull import PullConsumer
from rocketq.client.consumer.push import PushConsumer
from rocketq.client.consumer.schedule import MQPullConsumerScheduleService
from rocketq.client.producer import Producer
from rocketq.common.service_state import ServiceLifecycle, ServiceState
from rocketq.errors import ClientError


class _Recorder(ServiceLifecycle):
    def __init__(self) -> None:
        self.calls: list[str] = []

    def start(self) -> None:
        self.calls.append("start")

    def shutdown(self) -> None:
        self.calls.append("shutdown")


def test_with_starts_then_shuts_down() -> None:
    service = _Recorder()
    with service as entered:
        assert entered is service
        assert service.calls == ["start"]
    assert service.calls == ["start", "shutdown"]


def test_with_shuts_down_on_an_exception_and_does_not_swallow_it() -> None:
    service = _Recorder()
    with pytest.raises(RuntimeError, match="boom"), service:
        raise RuntimeError("boom")
    assert service.calls == ["start", "shutdown"]


@pytest.mark.parametrize(
    "cls", [Producer, PushConsumer, PullConsumer, LitePullConsumer, MQPullConsumerScheduleService]
)
def test_every_client_service_is_a_context_manager(cls: type) -> None:
    assert issubclass(cls, ServiceLifecycle)


def test_only_a_fresh_service_may_start() -> None:
    ServiceState.CREATE_JUST.check_startable("producer")
    for state in (ServiceState.RUNNING, ServiceState.SHUTDOWN_ALREADY, ServiceState.START_FAILED):
        with pytest.raises(ClientError, match=f"service state not OK, maybe started once, {state.name}"):
            state.check_startable("producer")
