"""Java regular expressions (the `pattern:` of a jmx_exporter rule) as Python `re` patterns.

The few Java spellings Python's `re` lacks (named groups, `\\Q...\\E`, `\\z`, POSIX `\\p{...}`
classes, inline flags in mid-pattern) are translated; `re.ASCII` gives Java's ASCII-only `\\w`,
`\\d`, `\\s` and case folding.
"""
from __future__ import annotations

import re
import warnings

_POSIX = {
    "Lower": "a-z", "Upper": "A-Z", "ASCII": "\\x00-\\x7f", "Alpha": "a-zA-Z", "Digit": "0-9",
    "Alnum": "a-zA-Z0-9", "Punct": "!-/:-@\\[-`{-~", "Graph": "!-~", "Print": " -~",
    "Blank": " \\t", "Cntrl": "\\x00-\\x1f\\x7f", "XDigit": "0-9a-fA-F", "Space": " \\t\\n\\x0b\\f\\r",
}
_HSPACE = " \\t\\xa0\\u1680\\u180e\\u2000-\\u200a\\u202f\\u205f\\u3000"
_INLINE_FLAGS = re.compile(r"\(\?([idmsuxU]*)(?:-([idmsuxU]*))?([:)])")


def _python_flags(on: str, off: str) -> str:
    # UNIX_LINES (d) and UNICODE_CASE (u) have no `re` equivalent and barely matter for
    # ObjectNames; UNICODE_CHARACTER_CLASS (U) is left for `re` to reject.
    on, off = on.replace("d", "").replace("u", ""), off.replace("d", "").replace("u", "")
    return on + ("-" + off if off else "")


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """The escape at `pattern[i]` (a backslash and the character after it) in Python's spelling,
    and where the pattern goes on."""
    d = pattern[i + 1]
    if d == "Q":  # \Q...\E quotes a literal
        end = pattern.find("\\E", i + 2)
        return re.escape(pattern[i + 2:] if end < 0 else pattern[i + 2:end]), len(pattern) if end < 0 else end + 2
    if d == "z" and not in_class:
        return "\\Z", i + 2
    if d == "Z" and not in_class:
        return "(?=\\n?\\Z)", i + 2
    if d == "h":
        return (_HSPACE if in_class else "[" + _HSPACE + "]"), i + 2
    if d in "pP" and pattern.startswith("{", i + 2) and "}" in pattern[i + 3:]:
        end = pattern.index("}", i + 3)
        name = pattern[i + 3:end]
        name = name[2:] if name.startswith("Is") and name[2:] in _POSIX else name
        if name in _POSIX and not (in_class and d == "P"):
            body = _POSIX[name]
            return (body if in_class else ("[" if d == "p" else "[^") + body + "]"), end + 1
        # another \p{...} is left for `re` to reject with its position
    return pattern[i:i + 2], i + 2


def _class_open(pattern: str, i: int) -> tuple[str, int]:
    """The `[` at `pattern[i]` that opens a character class, and where the class goes on."""
    out, i, n = "[", i + 1, len(pattern)
    # A ']' right after '[' or '[^' is a literal in both dialects.
    if i < n and pattern[i] == "^":
        out += "^"
        i += 1
    if i < n and pattern[i] == "]":
        out += "]"
        i += 1
    return out, i


def _group_open(pattern: str, i: int, frames: list[list[str]]) -> tuple[str, int]:
    """The `(` at `pattern[i]`: a group, a named group or inline flags; `frames` gets the group
    or the flags it opens."""
    flags = _INLINE_FLAGS.match(pattern, i)
    if flags and (flags.group(1) or flags.group(2) is not None):
        python = _python_flags(flags.group(1), flags.group(2) or "")
        if flags.group(3) == ")":  # (?i): from here to the end of the enclosing group
            if not python:
                return "", flags.end()
            frames[-1].append(python)
            return f"(?{python}:", flags.end()
        frames.append([])  # (?i:...)
        return f"(?{python}:", flags.end()
    frames.append([])
    if pattern.startswith("(?<", i) and i + 3 < len(pattern) and pattern[i + 3] not in "=!":
        return "(?P<", i + 3
    return "(", i + 1


def java_regex_to_python(pattern: str) -> str:
    """Rewrite the Java-only spellings; everything else is the same in both dialects.

    Java's inline flags `(?i)` may appear anywhere and last to the end of the enclosing group;
    `re` wants global flags first, so they become scoped groups `(?i:...)`, closed (and reopened
    after each `|`) where Java's would end.
    """
    out: list[str] = []
    frames: list[list[str]] = [[]]  # per open group: the inline flag groups opened inside it
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            text, i = _escape(pattern, i, in_class)
        elif in_class:
            in_class = c != "]"
            text, i = c, i + 1
        elif c == "[":
            in_class = True
            text, i = _class_open(pattern, i)
        elif c == "(":
            text, i = _group_open(pattern, i, frames)
        elif c == ")" and len(frames) > 1:
            text, i = ")" * len(frames.pop()) + ")", i + 1
        elif c == "|" and frames[-1]:
            opened = frames[-1]
            text, i = ")" * len(opened) + "|" + "".join(f"(?{f}:" for f in opened), i + 1
        else:
            text, i = c, i + 1
        out.append(text)
    out.append(")" * len(frames[0]))
    return "".join(out)


def compile_java_regex(pattern: str) -> re.Pattern:
    """Compile a rule pattern as jmx_exporter does: `^.*(?:PATTERN).*$`, matched in full.

    Raises re.error with the position inside the pattern as the user wrote it (as long as the
    translation did not have to change the text before that position).
    """
    translated = java_regex_to_python(pattern)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # Java's nested classes look odd to `re`
        re.compile(translated, re.ASCII)
        return re.compile(".*(?:" + translated + ").*", re.ASCII)
