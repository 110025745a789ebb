"""Expression nodes of the SQL92 filter and their Java construction checks.

Mirrors ``org.apache.rocketmq.filter.expression`` (4.9.7): ``ConstantExpression`` /
``BooleanConstantExpression``, ``PropertyExpression``, ``ComparisonExpression``,
``LogicExpression``, ``UnaryExpression`` (negate, NOT, boolean cast, IN).

Each node is an :class:`Expr` holding a compiled closure ``evaluate(properties)`` that
returns a Java value (``None`` = null; see :mod:`rocketq.filter.values`) plus the static
facts the factories check (constant? boolean? property?). Invariants, as in Java:

* three-valued logic: a missing property is null, a comparison with null is null, ``AND``
  is false if either side is false, ``OR`` true if either is true, else null when either
  is null; ``NOT null`` is null. Only a final TRUE matches.
* ``x = y`` with exactly one null side is null when the left is null and FALSE when the
  right is (so ``1 <> a`` with ``a`` missing is TRUE); ``IS NULL`` is ``= NULL`` without
  the operand checks.
* a property used as a boolean (``a AND ...``, ``NOT a``) is FALSE unless its value is a
  Boolean — property values are strings, so it is FALSE when present, null when missing.
* ``IN``/``NOT IN`` need a property on the left and string literals; a non-string value
  gives null.
* the factories raise :class:`FilterParseError` where Java's throw ``RuntimeException``:
  ``<``-family operands that are non-numeric constants or boolean expressions, ``= NULL``,
  a boolean constant compared with a non-boolean, BETWEEN with a null bound or low > high.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rocketq.filter.errors import FilterEvaluationError, FilterParseError
from rocketq.filter.values import JInt, java_compare, java_parse_double

__all__ = [
    "Expr",
    "ExprKind",
    "boolean_cast",
    "constant",
    "create_and",
    "create_between",
    "create_compare",
    "create_equal",
    "create_in",
    "create_is_not_null",
    "create_is_null",
    "create_negate",
    "create_not",
    "create_not_between",
    "create_not_equal",
    "create_or",
    "property_expr",
]

Properties = Mapping[str, object]
Evaluate = Callable[[Properties], object]


class ExprKind(enum.Enum):
    """What Java's ``instanceof`` checks see."""

    CONSTANT = "constant"  # ConstantExpression (numbers, strings)
    BOOLEAN_CONSTANT = "boolean constant"  # BooleanConstantExpression TRUE/FALSE/NULL
    PROPERTY = "property"  # PropertyExpression
    BOOLEAN = "boolean"  # any other BooleanExpression (comparison, logic, NOT, IN, cast)
    VALUE = "value"  # negation: neither constant nor boolean


@dataclass(frozen=True, slots=True)
class Expr:
    """A compiled node: ``evaluate`` plus its Java ``toString`` for error messages."""

    evaluate: Evaluate
    kind: ExprKind
    text: str
    value: object = None  # the value of a constant

    @property
    def is_constant(self) -> bool:
        return self.kind in (ExprKind.CONSTANT, ExprKind.BOOLEAN_CONSTANT)

    @property
    def is_boolean(self) -> bool:
        return self.kind in (ExprKind.BOOLEAN, ExprKind.BOOLEAN_CONSTANT)


def _runtime(message: str) -> FilterParseError:
    return FilterParseError(f"java.lang.RuntimeException: {message}")


def _encode_string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _constant_text(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return _encode_string(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def constant(value: object, *, boolean: bool = False) -> Expr:
    """``ConstantExpression`` (``boolean`` = ``BooleanConstantExpression``)."""
    kind = ExprKind.BOOLEAN_CONSTANT if boolean else ExprKind.CONSTANT
    return Expr(lambda _p: value, kind, _constant_text(value), value)


def decimal_constant(image: str) -> Expr:
    """``ConstantExpression.createFromDecimal``: Integer in the int range, else Long."""
    text = image[:-1] if image[-1] in "lL" else image
    value = int(text)
    if value > 2**63 - 1:
        raise FilterParseError(f'java.lang.NumberFormatException: For input string: "{text}"')
    return constant(JInt(value) if value <= 2**31 - 1 else value)


def float_constant(image: str) -> Expr:
    """``ConstantExpression.createFloat``: a Double; infinity and 0.0 are refused (Java
    compares with ``Double.MIN_VALUE``, the smallest *positive* double)."""
    value = java_parse_double(image)
    if value > 1.7976931348623157e308:
        raise _runtime(f"{image} is greater than 1.7976931348623157E308")
    if value < 5e-324:
        raise _runtime(f"{image} is less than 4.9E-324")
    return constant(value)


def property_expr(name: str) -> Expr:
    """``PropertyExpression``: the property's value, null when missing."""
    return Expr(lambda p: p.get(name), ExprKind.PROPERTY, name)


def _boolean(evaluate: Evaluate, text: str) -> Expr:
    return Expr(evaluate, ExprKind.BOOLEAN, text)


# ---------------------------------------------------------------------- unary
def create_negate(operand: Expr) -> Expr:
    """``UnaryExpression.createNegate``: numbers negate, anything else gives null."""
    inner = operand.evaluate

    def evaluate(p: Properties) -> object:
        v = inner(p)
        t = type(v)
        if t is JInt:
            return JInt(-v)  # type: ignore[operator]
        if t is int or t is float:
            return -v  # type: ignore[operator]
        return None

    return Expr(evaluate, ExprKind.VALUE, f"(- {operand.text})")


def boolean_cast(operand: Expr) -> Expr:
    """``UnaryExpression.createBooleanCast``: a property read as a boolean."""
    inner = operand.evaluate

    def evaluate(p: Properties) -> object:
        v = inner(p)
        if v is None:
            return None
        return v if type(v) is bool else False

    return _boolean(evaluate, operand.text)


def create_not(operand: Expr) -> Expr:
    """``UnaryExpression.createNOT`` over a boolean expression."""
    inner = operand.evaluate

    def evaluate(p: Properties) -> object:
        v = inner(p)
        return None if v is None else not v

    return _boolean(evaluate, f"(NOT {operand.text})")


def create_in(left: Expr, elements: Sequence[str], *, negate: bool) -> Expr:
    """``ComparisonExpression.createInFilter`` / ``createNotInFilter``."""
    if left.kind is not ExprKind.PROPERTY:
        raise _runtime(f"Expected a property for In expression, got: {left.text}")
    members = frozenset(elements)
    inner = left.evaluate

    def evaluate(p: Properties) -> object:
        v = inner(p)
        if type(v) is not str:
            return None
        return (v in members) != negate

    symbol = "NOT IN" if negate else "IN"
    listed = ", ".join(elements)
    return _boolean(evaluate, f"{left.text} {symbol} ( {listed} )")


# ---------------------------------------------------------------------- logic
def _logic(left: Expr, right: Expr, deciding: bool, symbol: str) -> Expr:
    """``LogicExpression``'s AND (``deciding=False``) and OR (``deciding=True``): either side
    equal to ``deciding`` decides the result at once (the right side is then not evaluated);
    otherwise an unknown (None) side makes the result unknown, as in SQL's three-valued logic."""
    lf, rf = left.evaluate, right.evaluate

    def evaluate(p: Properties) -> object:
        lv = lf(p)
        if lv is deciding:
            return deciding
        rv = rf(p)
        if rv is deciding:
            return deciding
        if lv is None or rv is None:
            return None
        return not deciding

    return _boolean(evaluate, f"({left.text} {symbol} {right.text})")


def create_and(left: Expr, right: Expr) -> Expr:
    """``LogicExpression.createAND``."""
    return _logic(left, right, False, "&&")


def create_or(left: Expr, right: Expr) -> Expr:
    """``LogicExpression.createOR``."""
    return _logic(left, right, True, "||")


# ---------------------------------------------------------------------- comparison
def _check_less_than_operand(expr: Expr) -> None:
    if expr.is_constant:
        if type(expr.value) in (JInt, int, float):
            return
        raise _runtime(f"Value '{expr.text}' cannot be compared.")
    if expr.is_boolean:
        raise _runtime(f"Value '{expr.text}' cannot be compared.")


def _check_equal_operand(expr: Expr) -> None:
    if expr.is_constant and expr.value is None:
        raise _runtime(f"'{expr.text}' cannot be compared.")


def _do_create_equal(left: Expr, right: Expr) -> Expr:
    lf, rf = left.evaluate, right.evaluate

    def evaluate(p: Properties) -> object:
        lv = lf(p)
        rv = rf(p)
        if lv is None or rv is None:
            if lv is None and rv is None:
                return True
            return None if lv is None else False
        if type(lv) is str and type(rv) is str:
            return lv == rv  # String.equals; compareTo would agree (the common case, fast)
        return java_compare(lv, rv) == 0

    return _boolean(evaluate, f"({left.text} == {right.text})")


def create_equal(left: Expr, right: Expr) -> Expr:
    """``ComparisonExpression.createEqual`` (``=``)."""
    _check_equal_operand(left)
    _check_equal_operand(right)
    if (
        left.is_constant
        and right.is_constant
        and left.kind is ExprKind.BOOLEAN_CONSTANT
        and not right.is_boolean
    ):
        raise _runtime(f"'{left.text}' cannot be compared with '{right.text}'")
    return _do_create_equal(left, right)


def create_not_equal(left: Expr, right: Expr) -> Expr:
    """``<>``: NOT of ``=``."""
    return create_not(create_equal(left, right))


_NULL = constant(None, boolean=True)


def create_is_null(left: Expr) -> Expr:
    """``IS NULL``."""
    return _do_create_equal(left, _NULL)


def create_is_not_null(left: Expr) -> Expr:
    """``IS NOT NULL``."""
    return create_not(_do_create_equal(left, _NULL))


_ORDER_TESTS: dict[str, Callable[[int], bool]] = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


def create_compare(symbol: str, left: Expr, right: Expr) -> Expr:
    """``createGreaterThan`` / ``GreaterThanEqual`` / ``LessThan`` / ``LessThanEqual``.

    Two strings are compared as doubles (``Double.valueOf``) or the evaluation fails.
    """
    _check_less_than_operand(left)
    _check_less_than_operand(right)
    test = _ORDER_TESTS[symbol]
    lf, rf = left.evaluate, right.evaluate

    def evaluate(p: Properties) -> object:
        lv = lf(p)
        if lv is None:
            return None
        rv = rf(p)
        if rv is None:
            return None
        if type(lv) is str and type(rv) is str:
            try:
                return test(java_compare(java_parse_double(lv), java_parse_double(rv)))
            except FilterEvaluationError as exc:
                raise FilterEvaluationError(
                    f"It's illegal to compare string by '>=', '>', '<', '<='. lv={lv}, rv={rv}"
                ) from exc
        return test(java_compare(lv, rv))

    return _boolean(evaluate, f"({left.text} {symbol} {right.text})")


def create_between(value: Expr, low: Expr, high: Expr) -> Expr:
    """``createBetween``: constant bounds must be non-null and low <= high."""
    if low.is_constant and high.is_constant:
        lv, rv = low.value, high.value
        if lv is None or rv is None:
            raise _runtime("Illegal values of between, values can not be null!")
        try:
            order = java_compare(rv, lv)
        except FilterEvaluationError as exc:
            raise _runtime(str(exc)) from exc
        if order < 0:
            raise _runtime(
                f"Illegal values of between, left value({low.text}) must less than or equal to "
                f"right value({high.text})"
            )
    return create_and(create_compare(">=", value, low), create_compare("<=", value, high))


def create_not_between(value: Expr, low: Expr, high: Expr) -> Expr:
    """``createNotBetween``: ``value < low OR value > high`` (no bound checks)."""
    return create_or(create_compare("<", value, low), create_compare(">", value, high))
