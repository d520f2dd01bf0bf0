"""Values as Java spells and reads them: `String.valueOf` of what SnakeYAML builds, and
`Double.valueOf` of a text (a rule's `valueFactor:`, a `value:` template's result)."""
from __future__ import annotations

import math
import re
from typing import Any

from exporter.exposition import java_double


def java_str(value: Any) -> str:
    """`String.valueOf` of what SnakeYAML would have built for a scalar."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is float:
        return java_double(value)
    return str(value)


_JAVA_BLANKS = "".join(map(chr, range(0x21)))  # String.trim() removes every char <= ' '
_JAVA_DOUBLE = re.compile(
    r"[\x00-\x20]*[+-]?(?:NaN|Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?)[\x00-\x20]*")


def parse_java_double(text: str) -> float | None:
    """`Double.valueOf`: the Java grammar (no '_', no 'inf'), or None where Java throws."""
    if not _JAVA_DOUBLE.fullmatch(text):
        return None
    body = text.strip(_JAVA_BLANKS)
    negative = body[0] == "-"
    body = body.lstrip("+-")
    if body == "NaN":
        return math.nan
    if body == "Infinity":
        value = math.inf
    elif body[:2] in ("0x", "0X"):
        value = float.fromhex(body.rstrip("fFdD"))
    else:
        value = float(body.rstrip("fFdD"))
    return -value if negative else value

