"""Pure parts of the admin API and CLI: JSON forms of the models, time parsing, tables."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.admin import (
    BrokerSummary,
    ClusterView,
    ConsumerProgress,
    MessageTrack,
    QueueProgress,
    QueueReset,
    QueueStatus,
    ResendMethod,
    ResendResult,
    ResetMode,
    ResetOffsetResult,
    TopicStatus,
    TrackType,
    message_to_json,
)
from rocketq.cli._output import Output, format_ms, parse_timestamp
from rocketq.protocol.message import MessageExt
from rocketq.protocol.message_queue import MessageQueue


def test_progress_lag_and_json() -> None:
    queues = [
        QueueProgress("T", "b", 0, broker_offset=10, consumer_offset=4, last_timestamp=5, client_id="c@1"),
        QueueProgress("T", "b", 1, broker_offset=3, consumer_offset=3, last_timestamp=0),
    ]
    progress = ConsumerProgress("G", queues, consume_tps=1.5)
    assert [q.lag for q in queues] == [6, 0] and progress.total_lag == 6
    obj = json.loads(json.dumps(progress.to_json_obj()))
    assert obj["total_lag"] == 6 and obj["queues"][0]["client_id"] == "c@1" and obj["queues"][1]["lag"] == 0


def test_every_model_is_plain_json() -> None:
    mq = MessageQueue("T", "b", 2)
    models = [
        ClusterView({"C": ["b"]}, [BrokerSummary("C", "b", 0, "1.2.3.4:5", runtime={"k": "v"})]),
        TopicStatus("T", [QueueStatus("b", 0, 1, 5, 7)]),
        ResetOffsetResult("G", "T", -1, ResetMode.ONLINE, [QueueReset(mq, 5, 3, 9)]),
        ResendResult("id", "G", ResendMethod.PRODUCE, True, "SEND_OK", new_msg_id="n"),
        MessageTrack("G", TrackType.NOT_ONLINE, "CODE:206"),
    ]
    for model in models:
        text = json.dumps(model.to_json_obj())  # type: ignore[attr-defined]
        assert isinstance(json.loads(text), dict)
    assert TopicStatus("T", [QueueStatus("b", 0, 1, 5, 7)]).total_messages == 4
    assert json.loads(json.dumps(models[2].to_json_obj()))["queues"][0] == {  # type: ignore[attr-defined]
        "topic": "T", "broker_name": "b", "queue_id": 2, "old_offset": 3, "new_offset": 5, "broker_offset": 9,
    }  # fmt: skip


@given(
    st.binary(max_size=64), st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=8), max_size=4)
)
def test_message_to_json_round_trips_any_body(body: bytes, props: dict[str, str]) -> None:
    msg = MessageExt("T", body, properties=props, store_host=("127.0.0.1", 10911), commit_log_offset=77)
    obj = json.loads(json.dumps(message_to_json(msg)))
    if obj["body_encoding"] == "utf-8":
        assert obj["body"].encode("utf-8") == body
    else:
        import base64

        assert base64.b64decode(obj["body"]) == body
    assert obj["offset_msg_id"] == msg.offset_msg_id and obj["store_host"] == "127.0.0.1:10911"


@given(st.integers(min_value=-1, max_value=2**62))
def test_parse_timestamp_integers(ms: int) -> None:
    assert parse_timestamp(str(ms)) == ms


@given(st.datetimes(min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(2200, 1, 1)))
def test_parse_timestamp_round_trips_local_times(when: dt.datetime) -> None:
    when = when.replace(microsecond=(when.microsecond // 1000) * 1000)
    expected = round(when.timestamp() * 1000)
    assert parse_timestamp(when.strftime("%Y-%m-%dT%H:%M:%S.%f")) == expected
    assert (
        parse_timestamp(when.strftime("%Y-%m-%d#%H:%M:%S:") + f"{when.microsecond // 1000:03d}") == expected
    )
    assert parse_timestamp(format_ms(expected).replace(" ", "T")) == expected


def test_parse_timestamp_words_and_errors() -> None:
    assert parse_timestamp("latest") == parse_timestamp("-1") == -1
    assert parse_timestamp("earliest") == 0
    assert abs(parse_timestamp("now") - dt.datetime.now().timestamp() * 1000) < 5000
    for bad in ("yesterday", "-5", "2026-13-01", ""):
        with pytest.raises(ValueError):
            parse_timestamp(bad)
    assert format_ms(0) == "-"


def test_output_json_and_table(capsys: pytest.CaptureFixture[str]) -> None:
    out = Output(json_mode=True)
    out.json({"a": [1, 2.5, None]})
    assert json.loads(capsys.readouterr().out) == {"a": [1, 2.5, None]}
    out = Output(json_mode=False)
    out.table(["Name", "Count"], [["x", 3], ["longer-name", 12]], title="T")
    text = capsys.readouterr().out
    assert "longer-name" in text and "12" in text and "Count" in text
    out.note("to stderr")
    captured = capsys.readouterr()
    assert captured.out == "" and "to stderr" in captured.err
