"""Java ``.properties`` text: ``broker.conf``, GET_BROKER_CONFIG / GET_NAMESRV_CONFIG bodies.

Mirrors ``java.util.Properties.load`` (comments, separators, continuations, escapes) as used
by ``MixAll.string2Properties``, and ``MixAll.properties2String`` for the other direction.
"""

from __future__ import annotations

from collections.abc import Mapping

from rocketq.errors import IllegalArgumentError

__all__ = ["format_properties", "parse_properties"]


def format_properties(props: Mapping[str, str]) -> str:
    """``MixAll.properties2String``: one ``key=value\\n`` line per entry, no escaping."""
    return "".join(f"{k}={v}\n" for k, v in props.items())


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch != "\\" or i + 1 >= n:
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and i + 6 <= n:
            try:
                out.append(chr(int(text[i + 2 : i + 6], 16)))
            except ValueError as exc:
                raise IllegalArgumentError(f"malformed \\uxxxx escape in {text!r}") from exc
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def _split_key_value(line: str) -> tuple[str, str]:
    # Properties.load: the key ends at the first unescaped '=', ':' or whitespace; then
    # whitespace, at most one '=' or ':', and more whitespace are skipped.
    i = 0
    n = len(line)
    while i < n:
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = line[:i]
    while i < n and line[i] in " \t\f":
        i += 1
    if i < n and line[i] in "=:":
        i += 1
    while i < n and line[i] in " \t\f":
        i += 1
    return _unescape(key), _unescape(line[i:])


def parse_properties(text: str) -> dict[str, str]:
    """``java.util.Properties.load`` over ``text`` (``MixAll.string2Properties``).

    Handles ``#``/``!`` comments, ``=``/``:``/whitespace separators, backslash line
    continuations and the ``\\t \\n \\r \\f \\uXXXX`` escapes. Later keys win.
    """
    props: dict[str, str] = {}
    logical: list[str] = []
    for raw in text.splitlines():
        stripped = raw.lstrip(" \t\f")
        if not logical and (not stripped or stripped[0] in "#!"):
            continue
        # An odd number of trailing backslashes continues the line.
        trailing = len(stripped) - len(stripped.rstrip("\\"))
        if trailing % 2 == 1:
            logical.append(stripped[:-1])
            continue
        logical.append(stripped)
        key, value = _split_key_value("".join(logical))
        logical.clear()
        props[key] = value
    if logical:
        key, value = _split_key_value("".join(logical))
        props[key] = value
    return props
