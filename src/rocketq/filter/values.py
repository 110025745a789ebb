"""Java value semantics of the SQL92 filter: classes, string conversions, ``__compare``.

Mirrors the value handling of ``org.apache.rocketmq.filter.expression.ComparisonExpression``
(4.9.7) with ``convertStringExpressions`` on, which is how ``SelectorParser.parse`` always
builds comparisons.

A Java value is represented by a Python object of one of five types, each standing for
one Java class: ``None`` (null), ``bool`` (Boolean), :class:`JInt` (Integer: a decimal
literal in the int range), ``int`` (Long), ``float`` (Double), ``str`` (String). Message
properties are always strings. Invariants:

* :func:`java_compare` answers exactly what ``__compare(lv, rv, true)`` answers, including
  its quirks: a Boolean against a number is "less" (-1) whatever the values, a String
  against a number is parsed with the number's ``valueOf`` (``Integer.valueOf`` for an
  Integer, so ``'3000000000'`` against ``5`` is an error), a Boolean on the left against a
  String raises (Java's ``ClassCastException``).
* Conversions follow ``Integer/Long/Double/Boolean.valueOf``, not Python's more lenient
  ``int``/``float`` (no underscores, no surrounding spaces for integers).
* Every failure raises :class:`FilterEvaluationError`; an expression's evaluation turns it
  into "no match" (``ExpressionMessageFilter``), never into an error for the broker.
"""

from __future__ import annotations

import math
import re
from typing import Final

from rocketq.filter.errors import FilterEvaluationError

__all__ = [
    "JInt",
    "JavaValue",
    "java_class",
    "java_compare",
    "java_parse_double",
    "java_parse_int",
    "java_parse_long",
]

_INT_MIN: Final = -(2**31)
_INT_MAX: Final = 2**31 - 1
_LONG_MIN: Final = -(2**63)
_LONG_MAX: Final = 2**63 - 1


class JInt(int):
    """A Java ``Integer`` (decimal literals in the int range); plain ``int`` is ``Long``."""

    __slots__ = ()


#: A Java value of the filter: null, Boolean, Integer, Long, Double or String.
JavaValue = None | bool | int | float | str

# Integer.valueOf / Long.valueOf: an optional sign and decimal digits (Character.digit
# accepts any Unicode decimal digit; so does \d on str), nothing else.
_INTEGER = re.compile(r"[+-]?\d+")
# Double.valueOf (FloatingDecimal.readJavaFormatString) after trimming chars <= ' '.
_DOUBLE = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)",
    re.ASCII,
)
_HEX_DOUBLE = re.compile(
    r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?",
    re.ASCII,
)


def _number_format(kind: str, s: str) -> FilterEvaluationError:
    return FilterEvaluationError(f'java.lang.NumberFormatException: For input string: "{s}" ({kind})')


def _parse_integral(s: str, lo: int, hi: int, kind: str) -> int:
    if not ((s.isascii() and s.isdigit()) or _INTEGER.fullmatch(s)):  # plain digits: no regex
        raise _number_format(kind, s)
    value = int(s)
    if not lo <= value <= hi:
        raise _number_format(kind, s)
    return value


def java_parse_int(s: str) -> JInt:
    """``Integer.valueOf(s)``: 32-bit range, else :class:`FilterEvaluationError`."""
    return JInt(_parse_integral(s, _INT_MIN, _INT_MAX, "int"))


def java_parse_long(s: str) -> int:
    """``Long.valueOf(s)``: 64-bit range, else :class:`FilterEvaluationError`."""
    return _parse_integral(s, _LONG_MIN, _LONG_MAX, "long")


def java_parse_double(s: str) -> float:
    """``Double.valueOf(s)``: trims chars <= U+0020; accepts NaN, Infinity, an f/d suffix
    and hexadecimal floating literals; anything else raises :class:`FilterEvaluationError`."""
    start, end = 0, len(s)
    while start < end and s[start] <= " ":
        start += 1
    while end > start and s[end - 1] <= " ":
        end -= 1
    text = s[start:end]
    if _DOUBLE.fullmatch(text):
        if text[-1] in "fFdD" and not text.endswith("Infinity"):
            text = text[:-1]
        return float(text)
    hexa = _HEX_DOUBLE.fullmatch(text)
    if hexa:
        value = float.fromhex("0x" + hexa.group(2))
        return -value if hexa.group(1) == "-" else value
    raise _number_format("double", s)


def _double_compare(a: float, b: float) -> int:
    """``Double.compareTo``: NaN is greatest and equals itself, -0.0 < 0.0."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan, b_nan = math.isnan(a), math.isnan(b)
    if a_nan or b_nan:
        return (1 if a_nan else 0) - (1 if b_nan else 0)
    if a == 0.0:
        a_neg, b_neg = math.copysign(1.0, a) < 0, math.copysign(1.0, b) < 0
        return (0 if a_neg else 1) - (0 if b_neg else 1)
    return 0


def _string_compare(a: str, b: str) -> int:
    """``String.compareTo``: UTF-16 code units (differs from code points above U+FFFF)."""
    if not (a.isascii() and b.isascii()):
        a_units, b_units = a.encode("utf-16-be", "surrogatepass"), b.encode("utf-16-be", "surrogatepass")
        return (a_units > b_units) - (a_units < b_units)
    return (a > b) - (a < b)


def _same_class_compare(lv: object, rv: object) -> int:
    if type(lv) is str:
        return _string_compare(lv, rv)  # type: ignore[arg-type]
    if type(lv) is float:
        return _double_compare(lv, rv)  # type: ignore[arg-type]
    return int((lv > rv) - (lv < rv))  # type: ignore[operator]


def java_class(value: object) -> str:
    """One letter per Java class: B(oolean), I(nteger), L(ong), D(ouble), S(tring)."""
    t = type(value)
    if t is str:
        return "S"
    if t is bool:
        return "B"
    if t is JInt:
        return "I"
    if t is int:
        return "L"
    if t is float:
        return "D"
    raise FilterEvaluationError(f"not a filter value: {value!r}")


def java_compare(lv: object, rv: object) -> int:
    """``ComparisonExpression.__compare(lv, rv, true)`` for two non-null values."""
    lt, rt = type(lv), type(rv)
    if lt is rt:
        return _same_class_compare(lv, rv)
    if lt is str:  # a property against a literal: the hot case
        assert isinstance(lv, str)
        if rt is JInt:
            return _int_compare(_parse_integral(lv, _INT_MIN, _INT_MAX, "int"), rv)
        if rt is int:
            return _int_compare(_parse_integral(lv, _LONG_MIN, _LONG_MAX, "long"), rv)
        if rt is float:
            return _double_compare(java_parse_double(lv), rv)  # type: ignore[arg-type]
        if rt is bool:
            return _int_compare(lv.lower() == "true", rv)  # Boolean.valueOf
        raise FilterEvaluationError(f"not a filter value: {rv!r}")
    lc, rc = java_class(lv), java_class(rv)
    if lc == "B":
        if rc == "S":  # Java casts the Boolean itself to String
            raise FilterEvaluationError(
                "java.lang.ClassCastException: java.lang.Boolean cannot be cast to java.lang.String"
            )
        return -1
    if lc in "IL":
        if rc in "IL":
            return _int_compare(lv, rv)
        if rc == "D":
            return _double_compare(float(lv), rv)  # type: ignore[arg-type]
        if rc == "S":
            lo, hi, kind = (_INT_MIN, _INT_MAX, "int") if lc == "I" else (_LONG_MIN, _LONG_MAX, "long")
            return _int_compare(lv, _parse_integral(rv, lo, hi, kind))  # type: ignore[arg-type]
        return -1
    # a Double on the left
    if rc in "IL":
        return _double_compare(lv, float(rv))  # type: ignore[arg-type]
    if rc == "S":
        return _double_compare(lv, java_parse_double(rv))  # type: ignore[arg-type]
    return -1


def _int_compare(a: object, b: object) -> int:
    return int((a > b) - (a < b))  # type: ignore[operator]
