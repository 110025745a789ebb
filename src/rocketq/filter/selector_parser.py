"""A hand-written parser for RocketMQ's SQL92 grammar: ``SelectorParser``.

Mirrors ``filter/.../parser/SelectorParser.jj`` of RocketMQ 4.9.7 production by
production, with JavaCC's lookahead (one token, two for ``IS NULL`` / ``NOT BETWEEN`` /
``NOT IN``). Precedence, loosest first::

    orExpression      := andExpression (OR andExpression)*
    andExpression     := equalityExpression (AND equalityExpression)*
    equalityExpression:= comparisonExpression ( "=" c | "<>" c | IS NULL | IS NOT NULL )*
    comparisonExpression := unaryExpr ( ">" u | ">=" u | "<" u | "<=" u
                         | [NOT] BETWEEN u AND u | [NOT] IN "(" 'str' ("," 'str')* ")" )*
    unaryExpr         := "+" unaryExpr | "-" unaryExpr | NOT unaryExpr | primaryExpr
    primaryExpr       := literal | ID | "(" orExpression ")"

Quirks kept on purpose (they are 4.9.7's behaviour):

* ``NOT`` binds tighter than any comparison: ``NOT a = 1`` is ``(NOT a) = 1`` (never
  true) and ``NOT a > 1`` is rejected (a boolean cannot be ordered); write ``NOT (a = 1)``.
* The top rule does not require the end of the text: ``a = 1 b`` parses as ``a = 1``
  (the token after a complete expression is lexed, so ``a = 1 #`` is still an error).
  A ``NOT`` right after a comparison operand must start ``NOT BETWEEN``/``NOT IN``.
* There is no LIKE, no arithmetic, no ``!=`` in 4.9.7's grammar.
"""

from __future__ import annotations

from rocketq.filter.errors import FilterParseError
from rocketq.filter.expression import (
    Expr,
    ExprKind,
    boolean_cast,
    constant,
    create_and,
    create_between,
    create_compare,
    create_equal,
    create_in,
    create_is_not_null,
    create_is_null,
    create_negate,
    create_not,
    create_not_between,
    create_not_equal,
    create_or,
    decimal_constant,
    float_constant,
    property_expr,
)
from rocketq.filter.lexer import Kind, Lexer, Token

__all__ = ["parse_selector"]

_COMPARE_OPS = {Kind.GT: ">", Kind.GE: ">=", Kind.LT: "<", Kind.LE: "<="}
_COMPARISON_START = frozenset({Kind.NOT, Kind.BETWEEN, Kind.IN, *_COMPARE_OPS})
_EQUALITY_START = frozenset({Kind.EQ, Kind.NE, Kind.IS})
_TRUE = constant(True, boolean=True)
_FALSE = constant(False, boolean=True)
_NULL = constant(None, boolean=True)


def _parse_error(token: Token) -> FilterParseError:
    shown = "<EOF>" if token.kind is Kind.EOF else f'{token.kind.value} "{token.image}"'
    return FilterParseError(
        "org.apache.rocketmq.filter.parser.ParseException: "
        f'Encountered " {shown} "" at line {token.line}, column {token.column}.'
    )


def _as_boolean(expr: Expr) -> Expr:
    """``asBooleanExpression``: booleans pass, a property is cast, the rest is an error."""
    if expr.is_boolean:
        return expr
    if expr.kind is ExprKind.PROPERTY:
        return boolean_cast(expr)
    raise FilterParseError(
        "org.apache.rocketmq.filter.parser.ParseException: "
        f"Expression will not result in a boolean value: {expr.text}"
    )


class _Parser:
    def __init__(self, text: str) -> None:
        self._lexer = Lexer(text)
        self._index = 0

    def _peek(self, ahead: int = 0) -> Token:
        return self._lexer.token_at(self._index + ahead)

    def _consume(self, kind: Kind) -> Token:
        token = self._peek()
        if token.kind is not kind:
            raise _parse_error(token)
        self._index += 1
        return token

    # ------------------------------------------------------------------ productions
    def selector(self) -> Expr:
        return _as_boolean(self._or())

    def _or(self) -> Expr:
        left = self._and()
        while self._peek().kind is Kind.OR:
            self._index += 1
            right = self._and()
            left = create_or(_as_boolean(left), _as_boolean(right))
        return left

    def _and(self) -> Expr:
        left = self._equality()
        while self._peek().kind is Kind.AND:
            self._index += 1
            right = self._equality()
            left = create_and(_as_boolean(left), _as_boolean(right))
        return left

    def _equality(self) -> Expr:
        left = self._comparison()
        while (kind := self._peek().kind) in _EQUALITY_START:
            self._index += 1
            if kind is Kind.EQ:
                left = create_equal(left, self._comparison())
            elif kind is Kind.NE:
                left = create_not_equal(left, self._comparison())
            elif self._peek().kind is Kind.NULL:
                self._index += 1
                left = create_is_null(left)
            else:
                self._consume(Kind.NOT)
                self._consume(Kind.NULL)
                left = create_is_not_null(left)
        return left

    def _comparison(self) -> Expr:
        left = self._unary()
        while (token := self._peek()).kind in _COMPARISON_START:
            kind = token.kind
            if kind in _COMPARE_OPS:
                self._index += 1
                left = create_compare(_COMPARE_OPS[kind], left, self._unary())
                continue
            negate = kind is Kind.NOT
            if negate:
                second = self._peek(1).kind
                if second not in (Kind.BETWEEN, Kind.IN):
                    raise _parse_error(token)
                self._index += 1
                kind = second
            self._index += 1
            if kind is Kind.BETWEEN:
                low = self._unary()
                self._consume(Kind.AND)
                high = self._unary()
                left = (create_not_between if negate else create_between)(left, low, high)
            else:
                left = create_in(left, self._string_list(), negate=negate)
        return left

    def _string_list(self) -> list[str]:
        self._consume(Kind.LPAREN)
        items = [self._string()]
        while self._peek().kind is Kind.COMMA:
            self._index += 1
            items.append(self._string())
        self._consume(Kind.RPAREN)
        return items

    def _string(self) -> str:
        image = self._consume(Kind.STRING).image
        return image[1:-1].replace("''", "'")

    def _unary(self) -> Expr:
        kind = self._peek().kind
        if kind is Kind.PLUS:
            self._index += 1
            return self._unary()
        if kind is Kind.MINUS:
            self._index += 1
            return create_negate(self._unary())
        if kind is Kind.NOT:
            self._index += 1
            return create_not(_as_boolean(self._unary()))
        return self._primary()

    def _primary(self) -> Expr:
        token = self._peek()
        kind = token.kind
        if kind is Kind.LPAREN:
            self._index += 1
            inner = self._or()
            self._consume(Kind.RPAREN)
            return inner
        self._index += 1
        if kind is Kind.STRING:
            return constant(token.image[1:-1].replace("''", "'"))
        if kind is Kind.DECIMAL:
            return decimal_constant(token.image)
        if kind is Kind.FLOAT:
            return float_constant(token.image)
        if kind is Kind.TRUE:
            return _TRUE
        if kind is Kind.FALSE:
            return _FALSE
        if kind is Kind.NULL:
            return _NULL
        if kind is Kind.ID:
            return property_expr(token.image)
        self._index -= 1
        raise _parse_error(token)


def parse_selector(text: str) -> Expr:
    """Parse ``text`` into a boolean expression (``SelectorParser.parse``, uncached).

    Raises :class:`FilterParseError` for everything Java rejects.
    """
    return _Parser(text).selector()
