"""``broker.conf`` read as Java reads it: ``java.util.Properties.load`` (its ``LineReader``,
separators and escapes; :func:`read_properties`), and the parsers ``MixAll.properties2Object`` hands
each value to (``Integer.parseInt``, ``Long.parseLong``, ``Boolean.parseBoolean``,
``Double.parseDouble``).
"""
from __future__ import annotations

import dataclasses
import re
import unicodedata

from .errors import UnsupportedConfigError

__all__ = ["PropertyLine", "read_properties", "parse_java_properties", "java_integer", "java_boolean",
           "java_double_ok"]

# ---------------------------------------------------------------------------------------------
# java.util.Properties.load


@dataclasses.dataclass(frozen=True)
class PropertyLine:
    """One entry of a properties text, as ``Properties.load`` reads it."""
    line: int    # 1-based physical line where the entry starts (continuations follow it)
    key: str
    value: str
    text: str    # the logical line as read, escapes not converted (for messages)


_BLANKS = " \t\f"


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Logical lines with their first physical line number, as ``Properties.LineReader.readLine``
    (JDK 9+) cuts them: ``\\n``, ``\\r`` or ``\\r\\n`` end a line; leading blanks (space, tab, form
    feed) and blank lines are skipped; a line whose first character is ``#`` or ``!`` is a comment
    (and never continues); an odd number of backslashes at the end joins the next line, whose
    leading blanks are dropped."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    line_no = 1
    start = 1
    skip_blanks = True
    appended_line_begin = False
    preceding_backslash = False
    in_comment = False
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        i += 1
        if c == "\r" or c == "\n":
            at_eof = i >= n  # the input ends with this line break
            line_no += 1
            if c == "\r" and i < n and text[i] == "\n":
                i += 1
            if in_comment:
                in_comment = False
                skip_blanks = True
                continue
            if skip_blanks and not appended_line_begin:
                continue
            skip_blanks = False
            appended_line_begin = False
            if not buf:
                skip_blanks = True
                continue
            if at_eof:
                break  # as at the end of the input, below
            if preceding_backslash:
                buf.pop()
                skip_blanks = True
                appended_line_begin = True
                preceding_backslash = False
                continue
            out.append((start, "".join(buf)))
            buf = []
            skip_blanks = True
            continue
        if in_comment:
            continue
        if skip_blanks:
            if c in _BLANKS:
                continue
            skip_blanks = False
            appended_line_begin = False
        if not buf:
            if c in "#!":
                in_comment = True
                continue
            start = line_no
        buf.append(c)
        preceding_backslash = (not preceding_backslash) if c == "\\" else False
    if buf:
        out.append((start, "".join(buf[:-1] if preceding_backslash else buf)))
    return out


class _MalformedEscape(ValueError):
    pass


def _convert(s: str) -> str:
    """``Properties.loadConvert``: ``\\uXXXX``, ``\\t \\n \\r \\f``, and ``\\x`` → ``x``."""
    if "\\" not in s:
        return s
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        i += 1
        if c != "\\" or i >= n:
            out.append(c)
            continue
        c = s[i]
        i += 1
        if c == "u":
            digits = s[i:i + 4]
            if len(digits) < 4 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise _MalformedEscape(f"\\u{digits}")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(c, c))
    return "".join(out)


def _split_entry(line: str) -> tuple[str, str]:
    """Key and value of a logical line (``Properties.load0``): the key ends at the first unescaped
    ``=``, ``:`` or blank; blanks, then one ``=`` or ``:``, then blanks separate it from the value."""
    key_len, n = 0, len(line)
    value_start = n
    has_sep = False
    backslash = False
    while key_len < n:
        c = line[key_len]
        if c in "=:" and not backslash:
            value_start = key_len + 1
            has_sep = True
            break
        if c in _BLANKS and not backslash:
            value_start = key_len + 1
            break
        backslash = (not backslash) if c == "\\" else False
        key_len += 1
    while value_start < n:
        c = line[value_start]
        if c not in _BLANKS:
            if not has_sep and c in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return line[:key_len], line[value_start:]


def read_properties(text: str) -> list[PropertyLine]:
    """Every entry of a ``.properties`` text in order, as ``java.util.Properties.load`` reads it.

    Raises:
        UnsupportedConfigError: a malformed ``\\uXXXX`` escape, which ``Properties.load`` rejects
            (a broker does not start with it), naming the line.
    """
    entries = []
    for line_no, logical in _logical_lines(text):
        key, value = _split_entry(logical)
        try:
            entries.append(PropertyLine(line_no, _convert(key), _convert(value), logical))
        except _MalformedEscape as e:
            raise UnsupportedConfigError(
                f"broker.conf line {line_no}: malformed unicode escape {e} in {logical[:80]!r}: Java's "
                "Properties.load rejects it (the broker would not start); write \\u and four hex digits, "
                "or the character itself") from None
    return entries


def parse_java_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (``key=value``, ``key: value``, ``key value``, ``#``/``!``
    comments, backslash line continuations and escapes) as ``java.util.Properties.load`` does;
    a key given twice keeps its last value."""
    return {e.key: e.value for e in read_properties(text)}


# ---------------------------------------------------------------------------------------------
# MixAll.properties2Object: how the broker turns a value into a setting


def java_integer(value: str, bits: int) -> int | None:
    """``Integer.parseInt`` (bits 32) / ``Long.parseLong`` (64): an optional sign and decimal digits
    (Unicode digits too, as ``Character.digit``), nothing else, within range; None if it throws."""
    body = value[1:] if value[:1] in "+-" else value
    if not body:
        return None
    digits = []
    for ch in body:
        d = unicodedata.decimal(ch, None)
        if d is None:
            return None
        digits.append(str(d))
    number = int("".join(digits)) * (-1 if value[:1] == "-" else 1)
    if not -(2 ** (bits - 1)) <= number <= 2 ** (bits - 1) - 1:
        return None
    return number


def java_boolean(value: str) -> bool:
    """``Boolean.parseBoolean``: true only for "true" in any case, nothing trimmed."""
    return value.lower() == "true"


_JAVA_DOUBLE_RE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)\Z")


def java_double_ok(value: str) -> bool:
    """Whether ``Double.parseDouble`` takes the value: it trims blanks and control characters,
    then reads a decimal literal (optionally ending in f/F/d/D), NaN or Infinity (hexadecimal
    literals left out)."""
    return bool(_JAVA_DOUBLE_RE.match(value.strip(" \t\n\r\f\v\x00")))

