"""The tokens of the SQL92 selector grammar: ``SelectorParserTokenManager``.

Mirrors the TOKEN/SKIP sections of ``filter/.../parser/SelectorParser.jj`` (RocketMQ 4.9.7):

* keywords NOT AND OR BETWEEN IN TRUE FALSE NULL IS, case-insensitive; an identifier is
  ``[a-zA-Z_$][a-zA-Z0-9_$]*`` (no dots), and a keyword wins over an identifier of the
  same length (``null`` is never a property name);
* DECIMAL ``0 | [1-9][0-9]*[lL]?`` (so ``0L`` is ``0`` then the identifier ``L``), FLOAT
  ``5.``, ``5.5``, ``.5``, ``5E10`` with optional signed exponent, STRING ``'...'`` with
  ``''`` for a quote (newlines allowed);
* operators ``= <> > >= < <= ( ) , + -`` and nothing else (no ``!=``, ``*``, ``LIKE``);
* skipped: `` \\t\\n\\r\\f``, ``-- ... <newline>`` (only when a newline follows: at the
  end of the text ``--`` is two minus signs), and ``/* ... */``.

Tokens are produced on demand (:meth:`Lexer.token_at`), as JavaCC's token manager is: a
character no token starts with is an error only when the parser reaches it, so text after
a complete expression is not even read past the first token.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Final

from rocketq.filter.errors import FilterParseError

__all__ = ["Kind", "Lexer", "Token"]


class Kind(enum.Enum):
    """Token kinds (``SelectorParserConstants``)."""

    EOF = "<EOF>"
    NOT = "NOT"
    AND = "AND"
    OR = "OR"
    BETWEEN = "BETWEEN"
    IN = "IN"
    TRUE = "TRUE"
    FALSE = "FALSE"
    NULL = "NULL"
    IS = "IS"
    DECIMAL = "<DECIMAL_LITERAL>"
    FLOAT = "<FLOATING_POINT_LITERAL>"
    STRING = "<STRING_LITERAL>"
    ID = "<ID>"
    EQ = "="
    NE = "<>"
    GT = ">"
    GE = ">="
    LT = "<"
    LE = "<="
    LPAREN = "("
    RPAREN = ")"
    COMMA = ","
    PLUS = "+"
    MINUS = "-"


_KEYWORDS: Final = {
    k.value: k
    for k in (Kind.NOT, Kind.AND, Kind.OR, Kind.BETWEEN, Kind.IN, Kind.TRUE, Kind.FALSE, Kind.NULL, Kind.IS)
}
_OPERATORS: Final = {k.value: k for k in (Kind.EQ, Kind.NE, Kind.GT, Kind.GE, Kind.LT, Kind.LE)} | {
    k.value: k for k in (Kind.LPAREN, Kind.RPAREN, Kind.COMMA, Kind.PLUS, Kind.MINUS)
}

_WHITESPACE: Final = " \t\n\r\f"
_ID: Final = re.compile(r"[a-zA-Z_$][a-zA-Z0-9_$]*")
_FLOAT: Final = re.compile(
    r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+"
)
_DECIMAL: Final = re.compile(r"0|[1-9][0-9]*[lL]?")
_STRING: Final = re.compile(r"'(?:''|[^'])*'", re.DOTALL)
_LINE_COMMENT: Final = re.compile(r"--[^\n\r]*(?:\r\n|\n|\r)")
_BLOCK_COMMENT: Final = re.compile(r"/\*[^*]*\*+(?:[^*/][^*]*\*+)*/")


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its kind, text and 1-based line/column of its first character."""

    kind: Kind
    image: str
    line: int
    column: int


class Lexer:
    """Lazily tokenizes one selector text."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0
        self._tokens: list[Token] = []

    def _line_col(self, pos: int) -> tuple[int, int]:
        before = self._text[:pos]
        line = before.count("\n") + 1
        return line, pos - (before.rfind("\n") + 1) + 1

    def token_at(self, index: int) -> Token:
        """The ``index``-th token (0-based), lexing as far as needed."""
        while len(self._tokens) <= index:
            self._tokens.append(self._next())
        return self._tokens[index]

    def _skip(self) -> None:
        text = self._text
        while self._pos < len(text):
            ch = text[self._pos]
            if ch in _WHITESPACE:
                self._pos += 1
                continue
            m = _LINE_COMMENT.match(text, self._pos) or _BLOCK_COMMENT.match(text, self._pos)
            if m is None:
                return
            self._pos = m.end()

    def _next(self) -> Token:
        self._skip()
        text, pos = self._text, self._pos
        line, col = self._line_col(pos)
        if pos >= len(text):
            return Token(Kind.EOF, "", line, col)
        ch = text[pos]
        m = _ID.match(text, pos)
        if m is not None:
            image = m.group()
            self._pos = m.end()
            return Token(_KEYWORDS.get(image.upper(), Kind.ID), image, line, col)
        if ch.isascii() and (ch.isdigit() or ch == "."):
            fm = _FLOAT.match(text, pos)
            dm = _DECIMAL.match(text, pos)
            f_len = fm.end() - pos if fm else 0
            d_len = dm.end() - pos if dm else 0
            if f_len or d_len:
                kind = Kind.FLOAT if f_len > d_len else Kind.DECIMAL
                end = pos + max(f_len, d_len)
                self._pos = end
                return Token(kind, text[pos:end], line, col)
        if ch == "'":
            sm = _STRING.match(text, pos)
            if sm is not None:
                self._pos = sm.end()
                return Token(Kind.STRING, sm.group(), line, col)
        two = text[pos : pos + 2]
        op = _OPERATORS.get(two) if len(two) == 2 else None
        if op is None:
            op = _OPERATORS.get(ch)
        if op is not None:
            self._pos = pos + len(op.value)
            return Token(op, op.value, line, col)
        # TokenMgrError.LexicalError (the column is where the bad character ends)
        raise FilterParseError(
            f"org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line {line}, column {col}.  "
            f'Encountered: "{ch}" ({ord(ch)}), after : ""'
        )
