"""The name server's request processor: one handler per request code.

Mirrors ``org.apache.rocketmq.namesrv.processor.DefaultRequestProcessor`` of Apache
RocketMQ 4.9.7 (the default processor of the name server's ``NettyRemotingServer``).

Invariants:

* Every handler is synchronous and short (table look-ups, a small KV file write); the
  processor runs on the server's event loop.
* A request whose header lacks a ``@CFNotNull`` field gets SYSTEM_ERROR with the remark
  ``the custom field <name> is null`` (``RemotingCommand.checkFields`` wording; Java's
  lenient decoder would only fail later with a NullPointerException).
* Unknown codes get REQUEST_CODE_NOT_SUPPORTED with the broker's remark
  `` request type N not supported``: the 4.9.7 name server returns ``null`` (the client
  times out); rocketq answers like 5.x so a client never hangs.
* Responses carry no custom header (``extFields`` absent) unless Java creates the
  response from a header class (REGISTER_BROKER, QUERY_DATA_VERSION, GET_KV_CONFIG,
  WIPE/ADD_WRITE_PERM), in which case ``extFields`` is present even when empty (``{}``, as
  in golden/broker_register.jsonl).
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from rocketq.common.log_limiter import LogLimiter
from rocketq.errors import IllegalArgumentError, ProtocolError
from rocketq.namesrv.kv_config import NAMESPACE_ORDER_TOPIC_CONFIG
from rocketq.protocol.codes import RequestCode, ResponseCode, Version
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    CommandHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rocketq.protocol.java_properties import format_properties, parse_properties
from rocketq.protocol.route import DataVersion, RegisterBrokerBody, TopicConfigSerializeWrapper, TopicList

if TYPE_CHECKING:
    from rocketq.namesrv.namesrv import NamesrvController
    from rocketq.remoting.server import Channel

__all__ = ["HANDLED_CODES", "TOPIC_NOT_EXIST_REMARK", "DefaultRequestProcessor"]

log = logging.getLogger(__name__)
#: Bad requests repeat (a flood, a fuzzer): one line per kind per 10 s, with the count.
_BAD_INPUT_LOG = LogLimiter(log)

_H = TypeVar("_H", bound=CommandHeader)
_T = TypeVar("_T")
_Handler = Callable[["DefaultRequestProcessor", "Channel | None", RemotingCommand], RemotingCommand]

#: ``FAQUrl.suggestTodo(FAQUrl.APPLY_TOPIC_URL)`` as appended to TOPIC_NOT_EXIST remarks.
_FAQ_SUFFIX = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
#: ``DefaultRequestProcessor.getRouteInfoByTopic``: remark prefix of TOPIC_NOT_EXIST (17).
TOPIC_NOT_EXIST_REMARK = "No topic route info in name server for the topic: "


class _BadRequest(Exception):
    """A request the handler answers with an error code (never leaves this module)."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


def _header(cls: type[_H], request: RemotingCommand) -> _H:
    header = cls.from_ext_fields(request.ext_fields)
    missing = header.missing_required()
    if missing:
        raise _BadRequest(
            ResponseCode.SYSTEM_ERROR, "; ".join(f"the custom field <{name}> is null" for name in missing)
        )
    return header


def _v(value: _T | None) -> _T:
    # Only called after _header() checked the @CFNotNull fields.
    assert value is not None
    return value


def _ok(request: RemotingCommand, body: bytes = b"", ext: dict[str, str] | None = None) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS, None, ext, body)


def _crc32(body: bytes) -> int:
    # UtilAll.crc32: java.util.zip.CRC32 masked to a non-negative int.
    return zlib.crc32(body) & 0x7FFFFFFF


class DefaultRequestProcessor:
    """The name server's ``DefaultRequestProcessor`` (a remoting ``RequestProcessor``)."""

    def __init__(self, controller: NamesrvController) -> None:
        self.controller = controller

    def reject_request(self) -> bool:
        """``rejectRequest``: never."""
        return False

    async def process(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand | None:
        """Answer one request; unknown codes get REQUEST_CODE_NOT_SUPPORTED."""
        return self.handle(channel, request)

    def handle(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        """Synchronous core of :meth:`process` (``channel`` may be None outside a server)."""
        handler = _HANDLERS.get(request.code)
        if handler is None:
            remark = f" request type {request.code} not supported"
            _BAD_INPUT_LOG.warning("unsupported", "name server: %s", remark.strip())
            return request.make_response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark)
        try:
            return handler(self, channel, request)
        except _BadRequest as bad:
            return request.make_response(bad.code, bad.remark)

    # ------------------------------------------------------------------ KV config
    def put_kv_config(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        h = _header(PutKVConfigRequestHeader, request)
        self.controller.kv_config_manager.put_kv_config(_v(h.namespace), _v(h.key), _v(h.value))
        return _ok(request)

    def get_kv_config(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        h = _header(GetKVConfigRequestHeader, request)
        value = self.controller.kv_config_manager.get_kv_config(_v(h.namespace), _v(h.key))
        if value is not None:
            return _ok(request, ext=GetKVConfigResponseHeader(value=value).to_ext_fields())
        return request.make_response(
            ResponseCode.QUERY_NOT_FOUND,
            f"No config item, Namespace: {h.namespace} Key: {h.key}",
            ext_fields=GetKVConfigResponseHeader().to_ext_fields(),
        )

    def delete_kv_config(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        h = _header(DeleteKVConfigRequestHeader, request)
        self.controller.kv_config_manager.delete_kv_config(_v(h.namespace), _v(h.key))
        return _ok(request)

    def get_kv_list_by_namespace(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        h = _header(GetKVListByNamespaceRequestHeader, request)
        body = self.controller.kv_config_manager.get_kv_list_by_namespace(_v(h.namespace))
        if body is not None:
            return _ok(request, body)
        return request.make_response(
            ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace}"
        )

    # ------------------------------------------------------------------ brokers
    def register_broker(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        h = _header(RegisterBrokerRequestHeader, request)
        body = request.body
        if h.body_crc32 and _crc32(body) != h.body_crc32:
            # DefaultRequestProcessor.checksum: only checked when the header's CRC is non-zero.
            _BAD_INPUT_LOG.warning(
                "crc32", "receive registerBroker request, crc32 not match, from %s", _peer(channel)
            )
            raise _BadRequest(ResponseCode.SYSTEM_ERROR, "crc32 not match")

        filter_servers: list[str] | None
        if not body:
            # Java: a null body registers an empty topic table with DataVersion(0, 0).
            data_version = DataVersion(timestamp=0, counter=0)
            topics = None
            filter_servers = [] if request.version >= Version.V3_0_11 else None
        else:
            try:
                if request.version >= Version.V3_0_11:
                    # registerBrokerWithFilterServer: RegisterBrokerBody, JSON or compressed.
                    reg = RegisterBrokerBody.decode(body, compressed=h.compressed)
                    wrapper = reg.topic_config_serialize_wrapper
                    filter_servers = list(reg.filter_server_list)
                else:
                    # registerBroker (brokers before 3.0.11): a bare TopicConfigSerializeWrapper.
                    wrapper = TopicConfigSerializeWrapper.from_json(body)
                    filter_servers = None
            except (ProtocolError, ValueError) as exc:
                raise _BadRequest(
                    ResponseCode.SYSTEM_ERROR, f"Failed to decode RegisterBrokerBody: {exc}"
                ) from exc
            data_version = wrapper.data_version
            topics = wrapper.topic_config_table

        result = self.controller.route_info_manager.register_broker(
            _v(h.cluster_name),
            _v(h.broker_addr),
            _v(h.broker_name),
            _v(h.broker_id),
            h.ha_server_addr,
            data_version,
            topics,
            filter_servers,
            channel,
        )
        ext = RegisterBrokerResponseHeader(
            ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
        ).to_ext_fields()
        kv = self.controller.kv_config_manager.get_kv_list_by_namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
        return _ok(request, kv or b"", ext)

    def unregister_broker(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        h = _header(UnRegisterBrokerRequestHeader, request)
        self.controller.route_info_manager.unregister_broker(
            _v(h.cluster_name), _v(h.broker_addr), _v(h.broker_name), _v(h.broker_id)
        )
        return _ok(request)

    def query_data_version(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        h = _header(QueryDataVersionRequestHeader, request)
        if not request.body:
            raise _BadRequest(
                ResponseCode.SYSTEM_ERROR, "QUERY_DATA_VERSION needs the broker's DataVersion as body"
            )
        try:
            data_version = DataVersion.from_json(request.body)
        except ProtocolError as exc:
            raise _BadRequest(ResponseCode.SYSTEM_ERROR, f"Failed to decode DataVersion: {exc}") from exc
        rim = self.controller.route_info_manager
        changed = rim.is_broker_topic_config_changed(_v(h.broker_addr), data_version)
        if not changed:
            # DefaultRequestProcessor.queryBrokerTopicConfig: an unchanged broker stays alive.
            rim.update_broker_info_update_timestamp(_v(h.broker_addr))
        stored = rim.query_broker_topic_config(_v(h.broker_addr))
        ext = QueryDataVersionResponseHeader(changed=changed).to_ext_fields()
        return _ok(request, b"" if stored is None else stored.to_json(), ext)

    def wipe_write_perm_of_broker(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        h = _header(WipeWritePermOfBrokerRequestHeader, request)
        count = self.controller.route_info_manager.wipe_write_perm_of_broker(_v(h.broker_name))
        log.info("wipe write perm of broker[%s], client: %s, %d", h.broker_name, _peer(channel), count)
        return _ok(request, ext=WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count).to_ext_fields())

    def add_write_perm_of_broker(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        h = _header(AddWritePermOfBrokerRequestHeader, request)
        count = self.controller.route_info_manager.add_write_perm_of_broker(_v(h.broker_name))
        log.info("add write perm of broker[%s], client: %s, %d", h.broker_name, _peer(channel), count)
        return _ok(request, ext=AddWritePermOfBrokerResponseHeader(add_topic_count=count).to_ext_fields())

    # ------------------------------------------------------------------ routes and lists
    def get_route_info_by_topic(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        h = _header(GetRouteInfoRequestHeader, request)
        topic = _v(h.topic)
        route = self.controller.route_info_manager.pickup_topic_route_data(topic)
        if route is None:
            return request.make_response(
                ResponseCode.TOPIC_NOT_EXIST, TOPIC_NOT_EXIST_REMARK + topic + _FAQ_SUFFIX
            )
        if self.controller.config.order_message_enable:
            route.order_topic_conf = self.controller.kv_config_manager.get_kv_config(
                NAMESPACE_ORDER_TOPIC_CONFIG, topic
            )
        # DefaultRequestProcessor.getRouteInfoByTopic: standard JSON (BrowserCompatible,
        # MapSortField) for clients >= V4_9_4 or that ask for it; fastjson's bare Long
        # keys ({0:"addr"}) for older clients.
        standard = request.version >= Version.V4_9_4 or bool(h.accept_standard_json_only)
        return _ok(request, route.to_json(standard_json=standard))

    def get_broker_cluster_info(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        # ClusterInfo.encode(): always fastjson's default output (bare Long keys).
        return _ok(request, self.controller.route_info_manager.get_all_cluster_info().to_json())

    def get_all_topic_list_from_nameserver(
        self, channel: Channel | None, request: RemotingCommand
    ) -> RemotingCommand:
        return _topic_list(request, self.controller.route_info_manager.get_all_topic_list())

    def delete_topic_in_namesrv(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        h = _header(DeleteTopicFromNamesrvRequestHeader, request)
        self.controller.route_info_manager.delete_topic(_v(h.topic), h.cluster_name or None)
        return _ok(request)

    def get_topics_by_cluster(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        h = _header(GetTopicsByClusterRequestHeader, request)
        return _topic_list(request, self.controller.route_info_manager.get_topics_by_cluster(_v(h.cluster)))

    def get_system_topic_list_from_ns(
        self, channel: Channel | None, request: RemotingCommand
    ) -> RemotingCommand:
        return _topic_list(request, self.controller.route_info_manager.get_system_topic_list())

    def get_unit_topic_list(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        return _topic_list(request, self.controller.route_info_manager.get_unit_topics())

    def get_has_unit_sub_topic_list(
        self, channel: Channel | None, request: RemotingCommand
    ) -> RemotingCommand:
        return _topic_list(request, self.controller.route_info_manager.get_has_unit_sub_topic_list())

    def get_has_unit_sub_un_unit_topic_list(
        self, channel: Channel | None, request: RemotingCommand
    ) -> RemotingCommand:
        return _topic_list(request, self.controller.route_info_manager.get_has_unit_sub_un_unit_topic_list())

    # ------------------------------------------------------------------ configuration
    def update_namesrv_config(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        if not request.body:
            return _ok(request)
        try:
            props = parse_properties(request.body.decode("utf-8"))
        except (UnicodeDecodeError, IllegalArgumentError) as exc:
            raise _BadRequest(ResponseCode.SYSTEM_ERROR, f"string2Properties error: {exc}") from exc
        if "kvConfigPath" in props or "configStorePath" in props:
            raise _BadRequest(ResponseCode.NO_PERMISSION, "Can not update config path")
        try:
            self.controller.update_config(props)
        except IllegalArgumentError as exc:
            raise _BadRequest(ResponseCode.SYSTEM_ERROR, str(exc)) from exc
        log.info("updateConfig called by %s: %s", _peer(channel), props)
        return _ok(request)

    def get_namesrv_config(self, channel: Channel | None, request: RemotingCommand) -> RemotingCommand:
        # Configuration.getAllConfigsFormatString: MixAll.properties2String of all fields.
        text = format_properties(self.controller.config.to_properties())
        return _ok(request, text.encode("utf-8"))


def _topic_list(request: RemotingCommand, topics: TopicList) -> RemotingCommand:
    return _ok(request, topics.to_json())


def _peer(channel: Channel | None) -> str:
    return "-" if channel is None else channel.remote_addr


_HANDLERS: dict[int, _Handler] = {
    RequestCode.PUT_KV_CONFIG: DefaultRequestProcessor.put_kv_config,
    RequestCode.GET_KV_CONFIG: DefaultRequestProcessor.get_kv_config,
    RequestCode.DELETE_KV_CONFIG: DefaultRequestProcessor.delete_kv_config,
    RequestCode.QUERY_DATA_VERSION: DefaultRequestProcessor.query_data_version,
    RequestCode.REGISTER_BROKER: DefaultRequestProcessor.register_broker,
    RequestCode.UNREGISTER_BROKER: DefaultRequestProcessor.unregister_broker,
    RequestCode.GET_ROUTEINFO_BY_TOPIC: DefaultRequestProcessor.get_route_info_by_topic,
    RequestCode.GET_BROKER_CLUSTER_INFO: DefaultRequestProcessor.get_broker_cluster_info,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: DefaultRequestProcessor.wipe_write_perm_of_broker,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: DefaultRequestProcessor.add_write_perm_of_broker,
    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: DefaultRequestProcessor.get_all_topic_list_from_nameserver,
    RequestCode.DELETE_TOPIC_IN_NAMESRV: DefaultRequestProcessor.delete_topic_in_namesrv,
    RequestCode.GET_KVLIST_BY_NAMESPACE: DefaultRequestProcessor.get_kv_list_by_namespace,
    RequestCode.GET_TOPICS_BY_CLUSTER: DefaultRequestProcessor.get_topics_by_cluster,
    RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: DefaultRequestProcessor.get_system_topic_list_from_ns,
    RequestCode.GET_UNIT_TOPIC_LIST: DefaultRequestProcessor.get_unit_topic_list,
    RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: DefaultRequestProcessor.get_has_unit_sub_topic_list,
    RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: DefaultRequestProcessor.get_has_unit_sub_un_unit_topic_list,
    RequestCode.UPDATE_NAMESRV_CONFIG: DefaultRequestProcessor.update_namesrv_config,
    RequestCode.GET_NAMESRV_CONFIG: DefaultRequestProcessor.get_namesrv_config,
}

#: Every request code the name server answers (anything else: REQUEST_CODE_NOT_SUPPORTED).
HANDLED_CODES: frozenset[int] = frozenset(_HANDLERS)
