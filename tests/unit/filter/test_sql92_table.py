"""The SQL92 filter against facts of RocketMQ 4.9.7's rocketmq-filter.

Each row is (expression, message properties, expected). Expected is the evaluation result
(True, False, None for SQL null), EVAL_ERROR when Java's ``evaluate`` throws (the message
then does not match), or PARSE_ERROR when ``SelectorParser.parse`` throws. Rows marked
"ExpressionTest"/"ParserTest" restate cases of Java's filter tests; the others follow from
the grammar (SelectorParser.jj) and the expression classes (ComparisonExpression,
LogicExpression, UnaryExpression, ConstantExpression) read as specifications.
"""

from __future__ import annotations

import pytest

from rocketq.filter import FilterParseError, compile_sql
from rocketq.filter.errors import FilterEvaluationError
from rocketq.filter.values import java_parse_double

PARSE_ERROR = "parse-error"
EVAL_ERROR = "eval-error"

AND_EXPR = "a=3 and b<>4 And c>5 AND d<=4"
OR_EXPR = "a=3 or b<>4 Or c>5 OR d<=4"

ROWS: list[tuple[str, dict[str, object], object]] = [
    # ---- ExpressionTest
    ("TAGS is not null and TAGS='''''tag'''''", {"TAGS": "''tag''"}, True),
    ("a > 3.1E10", {"a": str(3.1415 * 10**10)}, True),
    ("a > 3.14", {"a": "3.1415"}, True),
    ("a > b", {"a": "10", "b": "20"}, False),
    ("a > b", {"a": "20", "b": "10"}, True),
    ("a is null OR a='hello'", {}, True),
    ("a is null OR a='hello'", {"a": "hello"}, True),
    ("a is null OR a='hello'", {"a": "abc"}, False),
    ("a=TRUE OR b=FALSE", {"a": "true", "b": "false"}, True),
    ("a=TRUE OR b=FALSE", {"a": "false", "b": "true"}, False),
    ("a is not null and a='hello'", {"a": "hello"}, True),
    ("a is not null and a='hello'", {}, False),
    (AND_EXPR, {"a": 3, "b": 5, "c": 6, "d": 1}, True),
    (AND_EXPR, {"a": "3", "b": "5", "c": "6", "d": "1"}, True),
    (AND_EXPR, {"a": 4, "b": 5, "c": 6, "d": 1}, False),
    (AND_EXPR, {"a": "4", "b": "5", "c": "6", "d": "1"}, False),
    (OR_EXPR, {"a": 3}, True),
    (OR_EXPR, {"a": 4, "b": 5}, True),
    (OR_EXPR, {"a": 4, "b": 4, "c": 6}, True),
    (OR_EXPR, {"a": 4, "b": 4, "c": 3, "d": 2}, True),
    (OR_EXPR, {"a": 4, "b": 4, "c": 3, "d": 10}, False),
    ("a in ('3', '4', '5')", {"a": "3"}, True),
    ("a in ('3', '4', '5')", {"a": "4"}, True),
    ("a in ('3', '4', '5')", {"a": "5"}, True),
    ("a in ('3', '4', '5')", {"a": "8"}, False),
    ("a not in ('3', '4', '5')", {"a": "8"}, True),
    ("a not in ('3', '4', '5')", {"a": "3"}, False),
    ("a not in ('3', '4', '5')", {"a": "5"}, False),
    ("a between 2 and 10", {"a": "2"}, True),
    ("a between 2 and 10", {"a": "10"}, True),
    ("a between 2 and 10", {"a": "3"}, True),
    ("a between 2 and 10", {"a": "1"}, False),
    ("a between 2 and 10", {"a": "11"}, False),
    ("a not between 2 and 10", {"a": "1"}, True),
    ("a not between 2 and 10", {"a": "11"}, True),
    ("a not between 2 and 10", {"a": "2"}, False),
    ("a not between 2 and 10", {"a": "10"}, False),
    ("a is null", {"abc": "2"}, True),
    ("a is null", {"a": "2"}, False),
    ("a is not null", {"a": "2"}, True),
    ("a is not null", {"abc": "2"}, False),
    ("a between up and low", {"a": "3.14", "up": "up", "low": "low"}, EVAL_ERROR),
    ("key is not null and key between 0 and 100", {"key": "con"}, EVAL_ERROR),
    ("a between 0 and 100", {"a": "abc"}, EVAL_ERROR),
    ("a=b", {"a": "3.14", "b": "3.14"}, True),
    ("a<>b", {"a": "3.14", "b": "3.14"}, False),
    ("a<>b", {"a": "3.14", "b": "3.141"}, True),
    # ---- ParserTest
    ("(a not in ('6', '4', '5')) or (b in ('3', '4', '5'))", {"a": "6", "b": "3"}, True),
    ("(a between 2 and 10) AND (b not between 6 and 9)", {"a": "5", "b": "10"}, True),
    ("(a between 2 and 10) AND (b not between 6 and 9)", {"a": "5", "b": "7"}, False),
    ("a <= now", {"a": "1", "now": "2"}, True),  # "now" is a plain property name
    ("a and between 2 and 10", {}, PARSE_ERROR),
    (" a between 10 and 0", {}, PARSE_ERROR),
    ("a > 100000000000000000000000", {}, PARSE_ERROR),
    ("a > 1" + "1" * 400 + "." + "1" * 400, {}, PARSE_ERROR),  # Double overflow
    # ---- missing properties: never an error, never a match
    ("a = 1", {}, None),
    ("a > 1", {}, None),
    ("a <> 1", {}, None),
    ("NOT (a = 1)", {}, None),
    ("a in ('x')", {}, None),
    ("a not in ('x')", {}, None),
    ("a between 1 and 2", {}, None),
    ("a not between 1 and 2", {}, None),
    ("a = b", {"a": "1"}, False),  # only a null left side makes "=" null
    ("1 = a", {}, False),  # a null right side is FALSE, not null
    ("1 <> a", {}, True),
    ("a = 1 AND b = 2", {"a": "2"}, False),
    ("a = 1 AND b = 2", {"a": "1"}, None),
    ("a = 1 OR b = 2", {"a": "1"}, True),
    ("a = 1 OR b = 2", {"a": "2"}, None),
    ("a IS NULL AND b IS NULL", {}, True),
    ("a", {}, None),
    ("NOT a", {}, None),
    # ---- types: strings against numbers, booleans, doubles
    ("a = 3", {"a": "3"}, True),
    ("a = 3", {"a": "+3"}, True),  # Integer.valueOf accepts a sign
    ("a = 3", {"a": "03"}, True),
    ("a = 3", {"a": " 3"}, EVAL_ERROR),  # Integer.valueOf does not trim
    ("a = 3", {"a": "3.0"}, EVAL_ERROR),
    ("a = 3", {"a": "abc"}, EVAL_ERROR),
    ("a = 3", {"a": "3000000000"}, EVAL_ERROR),  # Integer literal: Integer.valueOf
    ("a = 3000000000", {"a": "3000000000"}, True),  # Long literal: Long.valueOf
    ("a = 3.0", {"a": "3"}, True),
    ("a = 3.0", {"a": " 3 "}, True),  # Double.valueOf trims
    ("a = 3.5", {"a": "3.5f"}, True),  # and takes a float suffix
    ("a > 1", {"a": "NaN"}, EVAL_ERROR),  # Long.valueOf("NaN")
    ("a > 1.5", {"a": "NaN"}, True),  # Double.compareTo: NaN is greatest
    ("a > 1.5", {"a": "Infinity"}, True),
    ("a < 1.5", {"a": "-Infinity"}, True),
    ("a = 'abc'", {"a": "abc"}, True),
    ("a = 'abc'", {"a": "ABC"}, False),
    ("a = '3'", {"a": "3"}, True),
    ("a <> 'abc'", {"a": "abd"}, True),
    ("a = TRUE", {"a": "TRUE"}, True),  # Boolean.valueOf ignores case
    ("a = TRUE", {"a": "yes"}, False),
    ("a = FALSE", {"a": "anything"}, True),
    ("a > b", {"a": "1e3", "b": "999.5"}, True),  # two strings compare as doubles
    ("a > b", {"a": "x", "b": "1"}, EVAL_ERROR),
    ("a = b", {"a": "x", "b": "y"}, False),
    ("a = b", {"a": "1", "b": "1.0"}, False),  # two strings compare as strings for '='
    ("a > 2147483647", {"a": "2147483648"}, EVAL_ERROR),  # an Integer literal: Integer.valueOf
    ("a > 2147483648", {"a": "2147483649"}, True),  # a Long literal: Long.valueOf
    ("a >= 1", {"a": "1"}, True),
    ("a <= 1", {"a": "2"}, False),
    ("a < 1", {"a": "-5"}, True),
    ("a > -1", {"a": "0"}, True),
    ("a > - -1", {"a": "0"}, False),
    ("a > +1", {"a": "2"}, True),
    ("a = 5L", {"a": "5"}, True),
    ("a > .5", {"a": "0.6"}, True),
    ("a > 5.", {"a": "6"}, True),
    ("a < 5E1", {"a": "49"}, True),
    ("a between 3 and 5.0", {"a": "5"}, True),
    ("a = 3 AND b = 'x'", {"a": 3, "b": "x"}, True),  # non-string context values
    ("a > 1.5", {"a": 2}, True),
    ("a = TRUE", {"a": True}, True),
    ("a", {"a": True}, True),  # a Boolean property used as a boolean
    ("a", {"a": "true"}, False),  # a String never is
    ("NOT a", {"a": "true"}, True),
    ("a in ('1')", {"a": 1}, None),  # IN needs a String value
    ("-a > 1", {"a": "5"}, None),  # negating a String gives null
    # ---- literals and constants
    ("TRUE", {}, True),
    ("FALSE", {}, False),
    ("NULL", {}, None),
    ("NOT NULL", {}, None),
    ("NOT FALSE", {}, True),
    ("TRUE = FALSE", {}, False),
    ("TRUE AND NULL", {}, None),
    ("FALSE AND NULL", {}, False),
    ("TRUE OR NULL", {}, True),
    ("1 = TRUE", {}, False),  # Integer vs Boolean compares as "less"
    ("1 = 1", {}, True),
    ("1 = 1.0", {}, True),
    ("'a' = 'a'", {}, True),
    ("'it''s' = a", {"a": "it's"}, True),
    ("a = 'multi\nline'", {"a": "multi\nline"}, True),
    # ---- precedence and associativity
    ("a = 1 OR b = 1 AND c = 1", {"a": "1", "b": "0", "c": "0"}, True),
    ("(a = 1 OR b = 1) AND c = 1", {"a": "1", "b": "0", "c": "0"}, False),
    ("a = 1 AND b = 1 OR c = 1", {"a": "0", "b": "0", "c": "1"}, True),
    ("NOT a = 1", {"a": "1"}, False),  # (NOT a) = 1: a Boolean vs Integer
    ("NOT a = 1", {"a": "2"}, False),
    ("NOT (a = 1)", {"a": "2"}, True),
    ("NOT NOT (a = 1)", {"a": "1"}, True),
    ("a between 1 and 3 and b = 2", {"a": "2", "b": "2"}, True),
    ("a not between 1 and 3 or b = 2", {"a": "2", "b": "3"}, False),
    ("a > 1 = TRUE", {"a": "2"}, True),  # comparison binds tighter than '='
    ("a IS NOT NULL = TRUE", {"a": "x"}, True),
    ("a = 1 IS NULL", {}, True),  # (a = 1) IS NULL, and a = 1 is null
    ("((a = 1))", {"a": "1"}, True),
    ("a=1 and b=2 -- trailing comment\n", {"a": "1", "b": "2"}, True),
    ("a=1 /* block */ and b=2", {"a": "1", "b": "2"}, True),
    ("A = 1 aNd B = 2", {"A": "1", "B": "2"}, True),  # keywords ignore case, names do not
    ("A = 1", {"a": "1"}, None),
    ("$x_1 = 'v'", {"$x_1": "v"}, True),
    # ---- text after a complete expression is not read
    ("a = 1 b", {"a": "1"}, True),
    ("a = 1 )", {"a": "1"}, True),
    ("a = 0L", {"a": "0"}, True),  # "0" then the identifier L
    ("a = 1 --", {"a": "1"}, True),  # no newline: two minus signs, never parsed
    # ---- parse errors
    ("", {}, PARSE_ERROR),
    ("a", {}, None),
    ("1", {}, PARSE_ERROR),  # will not result in a boolean value
    ("'abc'", {}, PARSE_ERROR),
    ("a = 1 #", {}, PARSE_ERROR),  # the next token is lexed
    ("a = 1 NOT b", {}, PARSE_ERROR),  # NOT after an operand must start NOT BETWEEN/IN
    ("a != 1", {}, PARSE_ERROR),
    ('a = "x"', {}, PARSE_ERROR),
    ("a LIKE 'x%'", {}, None),  # no LIKE in 4.9.7: "a", then ignored text
    ("a LIKE 'x%'", {"a": "xyz"}, False),
    ("a = 1 AND", {}, PARSE_ERROR),
    ("a = 'unterminated", {}, PARSE_ERROR),
    ("(a = 1", {}, PARSE_ERROR),
    ("a.b = 1", {}, PARSE_ERROR),
    ("a = NULL", {}, PARSE_ERROR),
    ("NULL = a", {}, PARSE_ERROR),
    ("TRUE = 1", {}, PARSE_ERROR),
    ("TRUE = a", {}, False),  # the compatibility check needs two constants
    ("a > 'x'", {}, PARSE_ERROR),
    ("a > TRUE", {}, PARSE_ERROR),
    ("a > NULL", {}, PARSE_ERROR),
    ("NOT a > 1", {}, PARSE_ERROR),  # (NOT a) cannot be ordered
    ("(a = 1) > 1", {}, PARSE_ERROR),
    ("a > 0.0", {}, PARSE_ERROR),  # createFloat refuses 0 (below Double.MIN_VALUE)
    ("a between 5 and 3", {}, PARSE_ERROR),
    ("a between NULL and 3", {}, PARSE_ERROR),
    ("a between 'a' and 'b'", {}, PARSE_ERROR),
    ("a not between 'a' and 'b'", {}, PARSE_ERROR),
    ("a in ()", {}, PARSE_ERROR),
    ("a in (1, 2)", {}, PARSE_ERROR),
    ("'x' in ('x')", {}, PARSE_ERROR),
    ("1 AND a", {}, PARSE_ERROR),
    ("NOT 1", {}, PARSE_ERROR),
    ("a > 9223372036854775808", {}, PARSE_ERROR),
    ("a IS NOT 1", {}, PARSE_ERROR),
    ("a = 1 /* open", {}, PARSE_ERROR),
]


def _run(expression: str, props: dict[str, object]) -> object:
    try:
        compiled = compile_sql(expression)
    except FilterParseError:
        return PARSE_ERROR
    try:
        return compiled.evaluate(props)
    except FilterEvaluationError:
        return EVAL_ERROR


def test_table_is_large_enough() -> None:
    assert len(ROWS) >= 100


@pytest.mark.parametrize(
    ("expression", "props", "expected"), ROWS, ids=[f"{i}:{r[0][:40]}" for i, r in enumerate(ROWS)]
)
def test_sql92_table(expression: str, props: dict[str, object], expected: object) -> None:
    assert _run(expression, props) == expected


def test_matches_is_true_only_for_true() -> None:
    expr = compile_sql("a > 1")
    assert expr.matches({"a": "2"})
    assert not expr.matches({"a": "0"})
    assert not expr.matches({})  # null
    assert not expr.matches({"a": "x"})  # evaluation error: no match, no exception


def test_parse_errors_read_like_java_causes() -> None:
    with pytest.raises(FilterParseError, match="Lexical error at line 1, column 7"):
        compile_sql("a = 1 #")
    with pytest.raises(FilterParseError, match="ParseException"):
        compile_sql("a = 1 AND")
    with pytest.raises(FilterParseError, match="Illegal values of between"):
        compile_sql("a between 5 and 3")


def test_parse_cache_keeps_failures() -> None:
    for _ in range(2):
        with pytest.raises(FilterParseError):
            compile_sql("a ==")
    assert compile_sql("x = 1") is compile_sql("x = 1")


@pytest.mark.parametrize(
    ("text", "value"),
    [("1", 1.0), (" 2.5 ", 2.5), ("1e3", 1000.0), ("-.5", -0.5), ("7d", 7.0), ("0x1p3", 8.0)],
)
def test_double_value_of(text: str, value: float) -> None:
    assert java_parse_double(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1_000", "1.2.3", "0x10"])
def test_double_value_of_rejects(text: str) -> None:
    with pytest.raises(FilterEvaluationError):
        java_parse_double(text)
