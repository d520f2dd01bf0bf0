"""Values as Java spells and reads them: `String.valueOf` of what SnakeYAML builds, `Double.toString`
and `Float.toString` of a number, and `Double.valueOf` of a text (a rule's `valueFactor:`, a `value:` template's result)."""
from __future__ import annotations

import math
import re
import struct
from decimal import Decimal
from fractions import Fraction
from typing import Any



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


def java_double(d: float) -> str:
    """Java's `Double.toString` (JDK 19+, shortest digits): `0.0`, `1.5`, `1.0E9`, `1.0E-4`, `NaN`.

    Decimal notation for 1e-3 <= |d| < 1e7, otherwise `d.dddE<exp>`; at least one digit after
    the point. When one significant digit would do, Java prints the closest two-digit decimal
    instead (so `4.9E-324`, not `5.0E-324`).
    """
    special = _special(d)
    if special is not None:
        return special
    text = repr(abs(d))  # shortest round-trip digits
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    point = len(whole) + (int(exp) if exp else 0)  # the decimal point sits after `point` digits
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    if len(digits) == 1:
        two = "%.1e" % abs(d)  # correctly rounded to two significant digits
        digits = (two[0] + two[2]).rstrip("0") or "0"
        point = int(two[4:]) + 1
    return _java_layout("-" if d < 0 else "", digits, point)


def java_float(f: float) -> str:
    """Java's `Float.toString` (JDK 19+) of a float32 value (held exactly in a Python float): the
    same rules as `java_double`, the digits those that identify the value among floats."""
    special = _special(f)
    if special is not None:
        return special
    x = Fraction(abs(f))
    bits = struct.unpack("<I", struct.pack("<f", abs(f)))[0]
    below = Fraction(struct.unpack("<f", struct.pack("<I", bits - 1))[0]) if bits > 1 else Fraction(0)
    above = Fraction(struct.unpack("<f", struct.pack("<I", bits + 1))[0]) if bits < 0x7F7FFFFF \
        else x + (x - Fraction(struct.unpack("<f", struct.pack("<I", bits - 1))[0]))
    low, high, inclusive = (below + x) / 2, (x + above) / 2, bits % 2 == 0  # round half to even
    exponent = Decimal(abs(f)).adjusted()
    for length in range(1, 10):
        length = max(length, 2)  # one digit would do: the closest two-digit decimal, as for doubles
        scale = Fraction(10) ** (exponent - length + 1)
        n = math.floor(x / scale)
        inside = [m for m in (n, n + 1) if (low <= m * scale <= high) if inclusive or low < m * scale < high]
        if inside:
            m = min(inside, key=lambda m: (abs(m * scale - x), m % 2))
            digits = str(m)
            point = len(digits) + exponent - length + 1
            return _java_layout("-" if f < 0 else "", digits.rstrip("0") or "0", point)
    raise ValueError(f"not a float32 value: {f!r}")


def _special(d: float) -> str | None:
    if d != d:
        return "NaN"
    if d in (math.inf, -math.inf):
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0.0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    return None


def _java_layout(sign: str, digits: str, point: int) -> str:
    """Significant `digits` with the decimal point after `point` of them, as Java writes them."""
    exponent = point - 1
    if -3 <= exponent < 7:
        if point <= 0:
            return sign + "0." + "0" * -point + digits
        if point >= len(digits):
            return sign + digits + "0" * (point - len(digits)) + ".0"
        return sign + digits[:point] + "." + digits[point:]
    return sign + digits[0] + "." + (digits[1:] or "0") + "E" + str(exponent)
