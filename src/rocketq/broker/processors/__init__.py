"""The broker's request processors, and the response helpers they share.

Processors mirror ``org.apache.rocketmq.broker.processor``: ``send``, ``pull`` and
``query`` (data path), ``client_manage`` (HEART_BEAT, UNREGISTER_CLIENT,
CHECK_CLIENT_CONFIG), ``consumer_manage`` (consumer lists and offsets) and ``admin``
(topics, groups, offsets by time, runtime info; also the default processor, so unknown
codes get REQUEST_CODE_NOT_SUPPORTED).

The helpers reproduce ``RemotingCommand.createResponseCommand``: a response built from a
header *class* carries ``extFields`` (``{}`` when every field is null), one built from
``null`` has no ``extFields`` at all; a code set without clearing the remark keeps
``"not set any response code"``. Tests compare these shapes with the golden frames.
"""

from __future__ import annotations

from typing import TypeVar

from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.frame import RemotingCommand
from rocketq.protocol.headers_base import CommandHeader

__all__ = [
    "NOT_SET_REMARK",
    "decode_request_header",
    "error_response",
    "header_response",
    "plain_response",
]

_H = TypeVar("_H", bound=CommandHeader)

#: ``RemotingCommand.createResponseCommand`` default remark.
NOT_SET_REMARK = "not set any response code"


def plain_response(
    request: RemotingCommand, code: int = ResponseCode.SUCCESS, remark: str | None = None, body: bytes = b""
) -> RemotingCommand:
    """``createResponseCommand(null)``: no extFields."""
    return request.make_response(int(code), remark, None, body)


def header_response(
    request: RemotingCommand,
    header: CommandHeader | None = None,
    code: int = ResponseCode.SUCCESS,
    remark: str | None = None,
    body: bytes = b"",
) -> RemotingCommand:
    """``createResponseCommand(HeaderClass)``: extFields from ``header`` (``{}`` if None)."""
    ext = header.to_ext_fields() if header is not None else {}
    return request.make_response(int(code), remark, ext, body)


def error_response(
    request: RemotingCommand, code: int, remark: str, *, with_ext: bool = False
) -> RemotingCommand:
    """An error answer; ``with_ext`` when the Java response was built from a header class."""
    return request.make_response(int(code), remark, {} if with_ext else None)


def decode_request_header(request: RemotingCommand, cls: type[_H]) -> _H | RemotingCommand:
    """Decode the request's header, or a SYSTEM_ERROR response naming the first missing
    ``@CFNotNull`` field (``RemotingCommand.decodeCommandCustomHeader`` / ``checkFields``)."""
    header, missing = cls.from_ext_fields_checked(request.ext_fields)
    if missing is not None:
        return plain_response(request, ResponseCode.SYSTEM_ERROR, f"the custom field <{missing}> is null")
    return header
