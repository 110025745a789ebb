"""The broker's direct read of a pull request header (``read_pull_header``) against the header
codec (``from_ext_fields_checked``): for every extFields map it either gives exactly the header
the codec gives, or defers (None) so the codec decides; it never accepts a map the codec refuses."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from rocketq.broker.processors.pull import read_pull_header
from rocketq.protocol.headers import PullMessageRequestHeader

_USUAL = {
    "queueId": "1",
    "maxMsgNums": "32",
    "sysFlag": "3",
    "suspendTimeoutMillis": "15000",
    "commitOffset": "0",
    "bname": "broker-a",
    "topic": "TopicTest",
    "queueOffset": "123456789",
    "expressionType": "TAG",
    "subVersion": "1700000000123",
    "consumerGroup": "GroupA",
}


def _check(ext: dict[str, str] | None) -> PullMessageRequestHeader | None:
    """Compare the direct read with the codec; return the direct read."""
    direct = read_pull_header(ext)
    header, missing = PullMessageRequestHeader.from_ext_fields_checked(ext)
    if direct is not None:
        assert missing is None, (ext, missing)
        assert dataclasses.asdict(direct) == dataclasses.asdict(header), ext
        for name, value in dataclasses.asdict(direct).items():
            assert type(value) is type(getattr(header, name)), (name, ext)
    return direct


def test_the_usual_request_is_read_directly() -> None:
    header = _check(_USUAL)
    assert header is not None
    assert (header.consumer_group, header.queue_id, header.queue_offset, header.sub_version) == (
        "GroupA",
        1,
        123456789,
        1700000000123,
    )
    assert header.subscription is None
    with_sub = _check({**_USUAL, "subscription": "a || b", "AccessKey": "ak", "Signature": "s"})
    assert with_sub is not None and with_sub.subscription == "a || b"
    without_optional = {k: v for k, v in _USUAL.items() if k not in ("bname", "expressionType")}
    assert _check(without_optional) is not None


def test_a_missing_required_field_is_left_to_the_codec() -> None:
    for name in ("consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset",
                 "suspendTimeoutMillis", "subVersion"):  # fmt: skip
        ext = dict(_USUAL)
        del ext[name]
        assert _check(ext) is None
    assert _check(None) is None
    assert _check({}) is None


def test_unusual_numbers_are_left_to_the_codec() -> None:
    for value in ("+1", "1" * 10, "\u0661", "", " 1", "1.0", "-"):
        assert read_pull_header({**_USUAL, "queueId": value}) is None
    for value in ("+1", "1" * 19, "0x10"):
        assert read_pull_header({**_USUAL, "queueOffset": value}) is None
    assert _check({**_USUAL, "queueId": "-1", "commitOffset": "-1", "queueOffset": "9" * 18}) is not None


_NUMBER = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(str),
    st.text(alphabet="+-0123456789 x\u0661", max_size=21),
)


@given(
    values=st.fixed_dictionaries(
        {},
        optional={
            "consumerGroup": st.text(max_size=8),
            "topic": st.text(max_size=8),
            "queueId": _NUMBER,
            "queueOffset": _NUMBER,
            "maxMsgNums": _NUMBER,
            "sysFlag": _NUMBER,
            "commitOffset": _NUMBER,
            "suspendTimeoutMillis": _NUMBER,
            "subVersion": _NUMBER,
            "subscription": st.text(max_size=8),
            "expressionType": st.text(max_size=8),
            "bname": st.text(max_size=8),
        },
    )
)
def test_any_map_is_read_as_the_codec_reads_it_or_left_to_it(values: dict[str, str]) -> None:
    try:
        _check(values)
    except AssertionError:
        raise
    except Exception:  # the codec refuses it: the direct read must have deferred
        assert read_pull_header(values) is None
