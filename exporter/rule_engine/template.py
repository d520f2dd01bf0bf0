"""Replacement templates: the `name:`, `help:`, `value:` and label texts of a rule, with the `$1`
and `${name}` of Java's `Matcher.replaceAll`."""
from __future__ import annotations

import re


class Template:
    """A Java `Matcher.replaceAll` replacement: `$n`, `${name}`, `\\x` escapes.

    Java's rule for `$10`: the first digit always names a group; each further digit is taken
    only while the number still names an existing group.
    """

    __slots__ = ("text", "constant", "parts")

    def __init__(self, text: str, regex: re.Pattern | None):
        self.text = text
        group_count = regex.groups if regex is not None else 0
        names = regex.groupindex if regex is not None else {}
        parts: list[str | int] = []
        literal: list[str] = []
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c == "\\":
                if i + 1 >= n:
                    raise ValueError(f"{text!r} ends with a single '\\'; write '\\\\' for a backslash")
                literal.append(text[i + 1])
                i += 2
                continue
            if c != "$":
                literal.append(c)
                i += 1
                continue
            i += 1
            if i >= n:
                raise ValueError(f"{text!r} ends with '$'; write '\\$' for a dollar sign")
            if text[i] == "{":
                end = i + 1
                while end < n and text[end].isascii() and text[end].isalnum():
                    end += 1
                name = text[i + 1:end]
                if not name or end >= n or text[end] != "}":
                    raise ValueError(f"{text!r}: '${{' must be followed by a group name and '}}'")
                if name[0].isdigit():
                    raise ValueError(f"{text!r}: group name {{{name}}} starts with a digit")
                if name not in names:
                    raise ValueError(f"{text!r} refers to group {{{name}}} but the pattern has no such named group")
                ref = names[name]
                i = end + 1
            else:
                if not ("0" <= text[i] <= "9"):
                    raise ValueError(f"{text!r}: '$' must be followed by a group number or {{name}}; "
                                     "write '\\$' for a dollar sign")
                ref = ord(text[i]) - 48
                i += 1
                while i < n and "0" <= text[i] <= "9" and ref * 10 + ord(text[i]) - 48 <= group_count:
                    ref = ref * 10 + ord(text[i]) - 48
                    i += 1
                if ref > group_count:
                    raise ValueError(f"{text!r} refers to group {ref} but the pattern has {group_count} group"
                                     + ("" if group_count == 1 else "s"))
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(ref)
        if literal:
            parts.append("".join(literal))
        self.parts = tuple(parts)
        self.constant = None if any(type(p) is int for p in parts) else "".join(parts)  # type: ignore[arg-type]

    def expand(self, match: re.Match | None) -> str:
        if self.constant is not None:
            return self.constant
        group = match.group  # type: ignore[union-attr]
        return "".join([p if type(p) is str else (group(p) or "") for p in self.parts])

    def __repr__(self) -> str:
        return f"Template({self.text!r})"

