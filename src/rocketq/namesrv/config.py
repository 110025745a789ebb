"""Name server configuration: one frozen dataclass with the Java defaults.

Mirrors ``org.apache.rocketmq.common.namesrv.NamesrvConfig`` plus the parts of
``NettyServerConfig`` a name server uses (listen port, idle time), as of 4.9.7; the
scan interval is a 5.x ``NamesrvConfig`` field (4.9.7 hard-codes 10 s in
``NamesrvController.initialize``) and the expiry time is 4.9.7's
``RouteInfoManager.BROKER_CHANNEL_EXPIRED_TIME``.

Also owns the Java ``.properties`` text format the name server speaks in
GET_NAMESRV_CONFIG / UPDATE_NAMESRV_CONFIG (``MixAll.properties2String`` /
``MixAll.string2Properties``), and the mapping between the Java property names
(``listenPort``, ``orderMessageEnable``, ``kvConfigPath`` ...) and the Python fields.

Invariants: a :class:`NamesrvConfig` is immutable and validated in ``__post_init__``;
updates produce a new instance (:meth:`NamesrvConfig.with_properties`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass

from rocketq.errors import IllegalArgumentError
from rocketq.remoting.tls import TlsConfig

__all__ = [
    "NamesrvConfig",
]

#: ``NamesrvConfig.kvConfigPath`` default: ``${user.home}/namesrv/kvConfig.json``.
_DEFAULT_KV_CONFIG_PATH = os.path.join("~", "namesrv", "kvConfig.json")


@dataclass(frozen=True, kw_only=True)
class NamesrvConfig:
    """Settings of one name server (``NamesrvConfig`` + ``NettyServerConfig``).

    Defaults are Java's: port 9876 (``NamesrvStartup`` sets it), brokers expire
    120 000 ms after their last registration, the expiry scan runs every 10 000 ms,
    ``orderMessageEnable`` is off and the KV table lives in ``~/namesrv/kvConfig.json``.
    """

    #: Address to bind: loopback unless set; ``0.0.0.0`` listens on every interface (with ACL
    #: off the name server warns at start).
    host: str = "127.0.0.1"
    #: ``NettyServerConfig.listenPort`` (``NamesrvStartup`` forces 9876); 0 = OS-assigned.
    listen_port: int = 9876
    #: Period of ``RouteInfoManager.scanNotActiveBroker`` (4.9.7: fixed 10 s; 5.x
    #: ``NamesrvConfig.scanNotActiveBrokerInterval``).
    scan_not_active_broker_interval_ms: int = 10_000
    #: ``RouteInfoManager.BROKER_CHANNEL_EXPIRED_TIME``: 2 minutes without registration.
    broker_channel_expired_time_ms: int = 120_000
    #: ``NamesrvConfig.orderMessageEnable``: add ``orderTopicConf`` to routes from the
    #: ``ORDER_TOPIC_CONFIG`` KV namespace.
    order_message_enable: bool = False
    #: ``NamesrvConfig.kvConfigPath``; ``None`` means ``~/namesrv/kvConfig.json``.
    kv_config_path: str | None = None
    #: ``NamesrvConfig.productEnvName`` (reported by GET_NAMESRV_CONFIG only).
    product_env_name: str = "center"
    #: ``NettyServerConfig.serverChannelMaxIdleTimeSeconds``: idle connections are closed.
    server_channel_max_idle_time_seconds: int = 120
    #: ``aclEnable`` (rocketq: Java's name server has no ACL): broker registration and
    #: unregistration, topic deletion and KV/config writes need an admin account of
    #: plain_acl.yml; reads stay open.
    acl_enable: bool = False
    #: ``aclPlainFile``: as the broker's (relative to ROCKETMQ_HOME, or absolute).
    acl_plain_file: str | None = None
    #: The ``tls.server.*`` settings of the listener (TlsSystemConfig).
    tls: TlsConfig = dataclasses.field(default_factory=TlsConfig)

    def __post_init__(self) -> None:
        if not 0 <= self.listen_port <= 65535:
            raise IllegalArgumentError(f"listen_port {self.listen_port} is not a TCP port")
        if self.scan_not_active_broker_interval_ms <= 0:
            raise IllegalArgumentError("scan_not_active_broker_interval_ms must be positive")
        if self.broker_channel_expired_time_ms <= 0:
            raise IllegalArgumentError("broker_channel_expired_time_ms must be positive")
        if self.server_channel_max_idle_time_seconds <= 0:
            raise IllegalArgumentError("server_channel_max_idle_time_seconds must be positive")

    @property
    def resolved_kv_config_path(self) -> str:
        """``kv_config_path`` with the Java default applied and ``~`` expanded."""
        return os.path.expanduser(self.kv_config_path or _DEFAULT_KV_CONFIG_PATH)

    # ------------------------------------------------------------------ Java properties
    def to_properties(self) -> dict[str, str]:
        """The Java property names and values (what GET_NAMESRV_CONFIG reports)."""
        out: dict[str, str] = {}
        for f in dataclasses.fields(self):
            if f.name == "tls":
                continue
            name = _JAVA_NAMES[f.name]
            value = getattr(self, f.name)
            if f.name == "kv_config_path":
                value = self.resolved_kv_config_path
            out[name] = _java_str(value)
        return out

    def with_properties(self, props: Mapping[str, str]) -> NamesrvConfig:
        """A copy with the known Java properties of ``props`` applied.

        Like ``Configuration.update`` (``MixAll.properties2Object``): unknown keys are
        ignored, values are parsed by the field's type; an unparsable value raises
        :class:`~rocketq.errors.IllegalArgumentError`.
        """
        changes: dict[str, object] = {}
        if any(key in props for key in TlsConfig.property_names()):
            changes["tls"] = TlsConfig.from_properties(props, self.tls)
        for py_name, java_name in _JAVA_NAMES.items():
            if java_name not in props:
                continue
            raw = props[java_name].strip()
            current = getattr(self, py_name)
            if isinstance(current, bool):
                # Boolean.parseBoolean: "true" in any case, everything else false.
                changes[py_name] = raw.lower() == "true"
            elif py_name == "acl_plain_file":
                changes[py_name] = raw or None
            elif isinstance(current, int):
                try:
                    changes[py_name] = int(raw)
                except ValueError as exc:
                    raise IllegalArgumentError(f"{java_name}={raw!r} is not an integer") from exc
            else:
                changes[py_name] = raw
        return dataclasses.replace(self, **changes) if changes else self  # type: ignore[arg-type]


#: Python field -> Java property name (``NamesrvConfig`` / ``NettyServerConfig`` getters).
_JAVA_NAMES: dict[str, str] = {
    "host": "bindAddress",
    "listen_port": "listenPort",
    "scan_not_active_broker_interval_ms": "scanNotActiveBrokerInterval",
    "broker_channel_expired_time_ms": "brokerChannelExpiredTime",
    "order_message_enable": "orderMessageEnable",
    "kv_config_path": "kvConfigPath",
    "product_env_name": "productEnvName",
    "server_channel_max_idle_time_seconds": "serverChannelMaxIdleTimeSeconds",
    "acl_enable": "aclEnable",
    "acl_plain_file": "aclPlainFile",
}


def _java_str(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
