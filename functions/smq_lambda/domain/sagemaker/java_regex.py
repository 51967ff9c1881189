"""SageMaker's service model states its string patterns in Java's regex dialect; this matches them with `re`.

AWS checks a member's `pattern` with java.util.regex against the whole value. Most patterns mean the same
under `re`; these constructs do not, and are translated:

- `\\p{Alnum}`, a POSIX class, which Java keeps to ASCII: `a-zA-Z0-9`.
- `\\p{L}`, `\\p{N}`, `\\p{Z}` (any Unicode general category), which `re` cannot spell: the code point ranges
  of the category, from `unicodedata`. Listing them scans every code point (a fifth of a second), so
  a value made only of ASCII characters is matched by a variant where each category is its ASCII members,
  which answers the same for such a value; the full variant is built once, for the first value that needs it.
- `.`, which in Java stops at every line terminator (`\\n`, `\\r`, U+0085, U+2028, U+2029), in `re` only at
  `\\n`: a class of everything else.
- `\\d`, `\\w`, `\\s` and their negations, which are ASCII in Java: the pattern is compiled with `re.ASCII`.

Anything else written `\\p{...}`, `\\P{...}`, a nested class or a class intersection is refused with
ValueError, so a construct a newer model brings is found by the test that matches every pattern reachable
from CreateTrainingJob, not by a silently wrong answer.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from itertools import groupby

POSIX_CLASSES = {"Alnum": "a-zA-Z0-9"}
"""Java's POSIX character classes (US-ASCII unless UNICODE_CHARACTER_CLASS is set) that models use."""
NOT_LINE_TERMINATOR = "[^\\n\\r\\x85\\u2028\\u2029]"
_PROPERTY = re.compile(r"\\p\{(\w+)\}")
_CATEGORIES = frozenset(
    "Lu Ll Lt Lm Lo Mn Mc Me Nd Nl No Pc Pd Ps Pe Pi Pf Po Sm Sc Sk So Zs Zl Zp Cc Cf Cs Co Cn".split()
)


def fullmatch(pattern: str, value: str) -> bool:
    """Whether `value` matches the Java `pattern` as a whole, as SageMaker checks it."""
    return compiled(pattern, ascii_only=value.isascii()).fullmatch(value) is not None


@functools.cache
def compiled(pattern: str, *, ascii_only: bool = False) -> re.Pattern[str]:
    """The Java `pattern` compiled for `re`; `ascii_only` gives the variant for values made of ASCII."""
    return re.compile(translate(pattern, ascii_only=ascii_only), re.ASCII)


def translate(pattern: str, *, ascii_only: bool = False) -> str:
    """The Java `pattern` in `re` syntax (to compile with `re.ASCII`)."""
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and pattern.startswith(("\\p", "\\P"), index):
            match = _PROPERTY.match(pattern, index)
            if match is None:
                raise ValueError(f"{pattern!r}: unsupported construct at {index}: {pattern[index : index + 8]!r}")
            members = _property_members(match.group(1), ascii_only=ascii_only)
            out.append(members if in_class else f"[{members}]")
            index = match.end()
            continue
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_class and (char == "[" or pattern.startswith("&&", index)):
            raise ValueError(f"{pattern!r}: nested classes and intersections have no `re` equivalent")
        if char == "[" or (char == "]" and in_class):
            in_class = char == "["
        out.append(NOT_LINE_TERMINATOR if char == "." and not in_class else char)
        index += 1
    return "".join(out)


def _property_members(name: str, *, ascii_only: bool) -> str:
    """The members of `\\p{name}`, written for the inside of a character class."""
    if name in POSIX_CLASSES:
        return POSIX_CLASSES[name]
    if not any(category.startswith(name) for category in _CATEGORIES):
        raise ValueError(f"\\p{{{name}}} is neither a supported POSIX class nor a Unicode general category")
    if ascii_only:
        return "".join(_escaped(code) for code in range(128) if unicodedata.category(chr(code)).startswith(name))
    return "".join(
        _escaped(first) if first == last else f"{_escaped(first)}-{_escaped(last)}"
        for first, last in _category_ranges()[name]
    )


@functools.cache
def _category_ranges() -> dict[str, list[tuple[int, int]]]:
    """Code point ranges of every general category and of every major class (`L`, `N`, ...)."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    start = 0
    for category, run in groupby(map(unicodedata.category, map(chr, range(sys.maxunicode + 1)))):
        end = start + len(list(run)) - 1
        for key in (category, category[0]):
            spans = ranges.setdefault(key, [])
            if spans and spans[-1][1] == start - 1:
                spans[-1] = (spans[-1][0], end)
            else:
                spans.append((start, end))
        start = end + 1
    return ranges


def _escaped(code: int) -> str:
    return f"\\U{code:08x}"
