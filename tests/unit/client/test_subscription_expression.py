"""Tag subscription expressions that match nothing in Java: rocketq's consumers refuse the
mistyped operators and warn on likely mistakes (issue #20)."""

from __future__ import annotations

import logging

import pytest

from rocketq.client.consumer.lite_pull import LitePullConsumer
from rocketq.client.consumer.push import PushConsumer
from rocketq.errors import IllegalArgumentError
from rocketq.protocol.heartbeat import check_tag_expression


@pytest.mark.parametrize("expr", ["TagA | TagB", "TagA && TagB", "TagA&TagB", "TagA || TagB |"])
def test_mistyped_operators_are_errors(expr: str) -> None:
    with pytest.raises(IllegalArgumentError, match=r"only operator is '\|\|'"):
        check_tag_expression(expr)


@pytest.mark.parametrize("expr", [None, "", "*", "TagA", "TagA || TagB", " TagA ||TagB|| "])
def test_good_expressions_pass_quietly(expr: str | None) -> None:
    assert check_tag_expression(expr) is None


@pytest.mark.parametrize(
    ("expr", "word"), [("TagA TagB", "space"), ("TagA,TagB", "space"), ("* || TagA", "'*'")]
)
def test_likely_mistakes_are_warnings(expr: str, word: str) -> None:
    warning = check_tag_expression(expr)
    assert warning is not None and word in warning


def test_consumers_check_on_subscribe(caplog: pytest.LogCaptureFixture) -> None:
    push = PushConsumer("g_expr", namesrv_addr="127.0.0.1:1")
    with pytest.raises(IllegalArgumentError):
        push.subscribe("T", "TagA | TagB")
    with caplog.at_level(logging.WARNING, logger="rocketq"):
        push.subscribe("T", "TagA,TagB")
    assert any("TagA,TagB" in r.getMessage() for r in caplog.records)
    lite = LitePullConsumer("g_expr_lite", namesrv_addr="127.0.0.1:1")
    with pytest.raises(IllegalArgumentError):
        lite.subscribe("T", "TagA && TagB")
