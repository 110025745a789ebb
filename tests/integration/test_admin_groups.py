"""Admin additions for the dashboard (issue #26): subscription groups and broker config."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from rocketq.admin import Admin
from rocketq.errors import IllegalArgumentError
from rocketq.testing.cluster import EmbeddedCluster

pytestmark = pytest.mark.integration


@pytest.fixture
def admin(embedded_cluster: EmbeddedCluster) -> Iterator[Admin]:
    with Admin(embedded_cluster.namesrv_addr) as a:
        yield a


def test_group_create_list_summary_delete(admin: Admin, unique_name: Callable[..., str]) -> None:
    group = unique_name("ag")
    assert group not in admin.group_configs()
    addrs = admin.create_group(group, retry_max_times=3)
    assert len(addrs) == 1
    configs = admin.group_configs()
    assert configs[group].retry_max_times == 3
    row = next(r for r in admin.group_summaries() if r.group == group)
    assert (row.clients, row.total_lag) == (0, 0)  # listed although it never consumed
    admin.create_group(group, retry_max_times=5)  # update
    assert admin.group_configs()[group].retry_max_times == 5
    admin.delete_group(group)
    assert group not in admin.group_configs()


def test_group_names_are_validated(admin: Admin) -> None:
    with pytest.raises(IllegalArgumentError):
        admin.create_group("bad group!")
    with pytest.raises(IllegalArgumentError):
        admin.delete_group("")


def test_broker_config(admin: Admin, embedded_cluster: EmbeddedCluster) -> None:
    config = admin.broker_config(embedded_cluster.broker_addrs[0])
    assert config["brokerName"] == embedded_cluster.broker_names[0]
    assert config["listenPort"] == embedded_cluster.broker_addrs[0].rsplit(":", 1)[1]
    assert list(config) == sorted(config)
