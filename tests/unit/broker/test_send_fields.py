"""The broker's direct read of a send request header (``read_send_fields``) against the
header codec (``from_ext_fields_checked``): for every extFields map it either gives exactly
the values the codec's header gives on the attributes the send processor reads, or defers
(None) so the codec decides; it never accepts a map the codec refuses."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker.processors import send
from rocketq.broker.processors.send import V1_WIRE, V2_WIRE, SendFields, read_send_fields
from rocketq.protocol.headers import SendMessageRequestHeader, SendMessageRequestHeaderV2

#: every attribute of SendFields: the wire table's attributes but the producer group, which is
#: only checked for presence (a compiled class exposes no __slots__ to read them from)
_ATTRS = tuple(attr for attr in send._WIRE_ATTRS if attr != "producer_group")
_CLASSES = {V1_WIRE: SendMessageRequestHeader, V2_WIRE: SendMessageRequestHeaderV2}


def _check(ext: dict[str, str] | None, wire: tuple[str, ...]) -> SendFields | None:
    """Compare the direct read with the codec; return the direct read."""
    fields = read_send_fields(ext, wire)
    header, missing = _CLASSES[wire].from_ext_fields_checked(ext)
    if fields is not None:
        assert missing is None, (ext, missing)
        for attr in _ATTRS:
            assert getattr(fields, attr) == getattr(header, attr), (attr, ext)
            assert type(getattr(fields, attr)) is type(getattr(header, attr)), (attr, ext)
    return fields


def _usual(wire: tuple[str, ...]) -> dict[str, str]:
    values = [
        "pg",
        "T",
        "TBW102",
        "4",
        "3",
        "0",
        "1700000000123",
        "0",
        "UNIQ_KEY\x01A\x02",
        "0",
        "16",
        "false",
    ]
    return dict(zip(wire, values, strict=True))


def test_usual_requests_are_read_directly() -> None:
    for wire in (V1_WIRE, V2_WIRE):
        ext = _usual(wire)
        fields = _check(ext, wire)
        assert fields is not None
        assert (fields.topic, fields.queue_id, fields.born_timestamp, fields.batch) == (
            "T",
            3,
            1700000000123,
            False,
        )
        # optional fields absent: the codec's defaults
        for optional in (wire[8], wire[9], wire[10], wire[11]):
            ext = _usual(wire)
            del ext[optional]
            assert _check(ext, wire) is not None
        ext = _usual(wire)
        ext[wire[11]] = "true"
        read = _check(ext, wire)
        assert read is not None and read.batch is True
        ext = _usual(wire)
        ext[wire[4]] = "-1"  # the broker picks the queue
        read = _check(ext, wire)
        assert read is not None and read.queue_id == -1


def test_unusual_requests_defer_to_the_codec() -> None:
    odd_numbers = ["", "+1", " 1", "1 ", "1_0", "0x1", "\u0661\u0662", "-", "--1", "1.0"]
    int_overflow = ["2147483648", "-2147483649", "9" * 10]
    for wire in (V1_WIRE, V2_WIRE):
        assert _check(None, wire) is None
        assert _check({}, wire) is None
        for key in wire[:8]:  # every @CFNotNull field missing in turn
            ext = _usual(wire)
            del ext[key]
            assert _check(ext, wire) is None
        for key in (*wire[3:8], wire[9], wire[10]):
            for text in odd_numbers if key == wire[6] else odd_numbers + int_overflow:
                ext = _usual(wire)
                ext[key] = text
                assert _check(ext, wire) is None, (key, text)
        for text in ("TRUE", "True", "yes", "", "1"):
            ext = _usual(wire)
            ext[wire[11]] = text
            assert _check(ext, wire) is None
        ext = _usual(wire)
        ext[wire[6]] = "9" * 19  # over 18 digits: the codec checks the long's range
        assert _check(ext, wire) is None


def test_the_other_generation_s_names_are_not_read() -> None:
    """A V1 map under SEND_MESSAGE_V2 (and the reverse) is missing every V2 (V1) field."""
    assert _check(_usual(V1_WIRE), V2_WIRE) is None
    assert _check(_usual(V2_WIRE), V1_WIRE) is None


_numberish = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64).map(str),
    st.integers(min_value=0, max_value=10**12).map(lambda n: f"+{n}"),
    st.integers(min_value=0, max_value=999).map(lambda n: f"00{n}"),
    st.text(alphabet="0123456789-+ _x\u0661", max_size=21),
)
_value = st.one_of(_numberish, st.sampled_from(["true", "false", "TRUE", "True", ""]), st.text(max_size=8))


@settings(max_examples=600, deadline=None)
@given(
    st.sampled_from([V1_WIRE, V2_WIRE]),
    st.data(),
)
def test_direct_read_equals_codec_or_defers(wire: tuple[str, ...], data: st.DataObject) -> None:
    ext = _usual(wire)
    keys = st.sampled_from([*wire, *(V1_WIRE if wire is V2_WIRE else V2_WIRE), "unitMode", "k", "n", "bname"])
    for key in data.draw(st.lists(keys, max_size=5)):
        if data.draw(st.booleans()):
            ext.pop(key, None)
        else:
            ext[key] = data.draw(_value)
    _check(ext, wire)
