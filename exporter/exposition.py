"""Samples -> the bytes Prometheus scrapes: text format 0.0.4 and OpenMetrics 1.0.

The 0.0.4 text is what jmx_exporter 0.x prints through Prometheus simpleclient 0.16, quirks
included, because users' parsers and diff tools see them: a trailing comma after every label set,
Java's `Double.toString` for values (`0.0`, `1.0E9`), `# HELP`/`# TYPE` named `<name>_total` for a
counter whose samples are named without it. A family (the samples sharing a name, in the order
they first appear) takes HELP from its first sample; samples of different types make it untyped.

This renders one to two million samples per scrape at 40,000 partitions, so the loop does as
little as it can per sample: label sets and values are formatted once and memoised (the same
label tuples and the same few values, 0.0 and 1.0 above all, come back every poll).
"""
from __future__ import annotations

import math
from typing import Iterable, Iterator, Sequence

from exporter.families import PARTITION, TOPIC, Family, TableSeries, of_samples, scaled
from exporter.model import Sample

TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

_MEMO_LIMIT = 500_000
_ZERO = "0.0"
# 0.0 and -0.0 are equal, so they would share a memo slot: only 0.0 is memoised, and a "0.0" from
# the memo is checked for a negative zero.
_value_memo: dict[float, str] = {0.0: _ZERO}
_labels_004_memo: dict[tuple, str] = {}
_labels_om_memo: dict[tuple, str] = {}


def java_double(d: float) -> str:
    """Java's `Double.toString` (JDK 19+, shortest digits): `0.0`, `1.5`, `1.0E9`, `1.0E-4`, `NaN`.

    Decimal notation for 1e-3 <= |d| < 1e7, otherwise `d.dddE<exp>`; at least one digit after
    the point. When one significant digit would do, Java prints the closest two-digit decimal
    instead (so `4.9E-324`, not `5.0E-324`).
    """
    if d != d:
        return "NaN"
    if d in (math.inf, -math.inf):
        return "Infinity" if d > 0 else "-Infinity"
    if d == 0.0:
        return "-0.0" if math.copysign(1.0, d) < 0 else "0.0"
    sign = "-" if d < 0 else ""
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
    exponent = point - 1
    if -3 <= exponent < 7:
        if point <= 0:
            return sign + "0." + "0" * -point + digits
        if point >= len(digits):
            return sign + digits + "0" * (point - len(digits)) + ".0"
        return sign + digits[:point] + "." + digits[point:]
    return sign + digits[0] + "." + (digits[1:] or "0") + "E" + str(exponent)


def go_double(d: float) -> str:
    """simpleclient's `doubleToGoString`: Java's format, with `+Inf`/`-Inf`/`NaN`."""
    text = _value_memo.get(d)
    if text is _ZERO:
        return "-0.0" if math.copysign(1.0, d) < 0 else _ZERO
    if text is None:
        if d != d:
            return "NaN"  # NaN never finds itself in a dict
        if d in (math.inf, -math.inf):
            text = "+Inf" if d > 0 else "-Inf"
        else:
            text = java_double(float(d))
        if len(_value_memo) >= _MEMO_LIMIT:
            _value_memo.clear()
            _value_memo[0.0] = _ZERO
        _value_memo[d] = text
    return text


def _escape_label_value(v: str) -> str:
    if "\\" in v or '"' in v or "\n" in v:
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return v


def _escape_help_004(h: str) -> str:
    if "\\" in h or "\n" in h:
        return h.replace("\\", "\\\\").replace("\n", "\\n")
    return h


def _label_set(pairs: Iterable[tuple[str, str]], openmetrics: bool) -> str:
    """`{k="v",...}` of (label, value text already escaped) pairs; "" for none."""
    if openmetrics:
        text = ",".join(f'{k}="{v}"' for k, v in pairs)
    else:
        text = "".join(f'{k}="{v}",' for k, v in pairs)  # simpleclient 0.16 ends every label with '",'
    return "{" + text + "}" if text else ""


def _labels_004(labels: tuple) -> str:
    text = _labels_004_memo.get(labels)
    if text is None:
        text = _label_set([(k, _escape_label_value(v)) for k, v in labels], False)
        if len(_labels_004_memo) >= _MEMO_LIMIT:
            _labels_004_memo.clear()
        _labels_004_memo[labels] = text
    return text


def _labels_om(labels: tuple) -> str:
    text = _labels_om_memo.get(labels)
    if text is None:
        text = _label_set([(k, _escape_label_value(v)) for k, v in labels], True)
        if len(_labels_om_memo) >= _MEMO_LIMIT:
            _labels_om_memo.clear()
        _labels_om_memo[labels] = text
    return text


def _sample_lines(samples: Iterable[Sample], name: str, labels_memo: dict, render_labels,
                  render_timestamp, append) -> None:
    """The hot loop for Samples: per sample a dict lookup for the label set, one for the value
    text, and one f-string."""
    get_labels = labels_memo.get
    get_value = _value_memo.get
    copysign = math.copysign
    for s in samples:
        number = s.value
        value = get_value(number)
        if value is None:
            value = go_double(number)
        elif value is _ZERO and copysign(1.0, number) < 0:
            value = "-0.0"
        labels = get_labels(s.labels)
        if labels is None:
            labels = render_labels(s.labels)
        if s.timestamp_ms is None:
            append(f"{name}{labels} {value}\n")
        else:
            append(f"{name}{labels} {value} {render_timestamp(s.timestamp_ms)}\n")


def _table_lines(part: TableSeries, name: str, openmetrics: bool, append) -> None:
    """The hot loop for a table: its present members' lines from the columns, no object per
    member. The label text is one format with the topic and the partition number as holes."""
    table, tpl = part.table, part.template
    braces = str.maketrans({"{": "{{", "}": "}}"})  # literal text inside a str.format template
    labels = _label_set([(k.translate(braces), "{0}" if v is TOPIC else "{1}" if v is PARTITION
                          else _escape_label_value(v).translate(braces)) for k, v in tpl.labels], openmetrics)
    if labels:  # the set's own braces are literal too
        labels = "{{" + labels[1:-1] + "}}"
    line = (name.translate(braces) + labels + " {2}\n").format
    topics = [_escape_label_value(t) for t in table.topics]
    topic, partition, values, present = table.topic, table.partition, table.values, table.present
    fixed, factor = tpl.fixed, tpl.factor
    for i in part.positions:
        if present[i]:
            append(line(topics[topic[i]], partition[i], go_double(scaled(values[i], fixed, factor))))


def _bodies(family: Family, openmetrics: bool) -> Iterator[str]:
    """A family's sample lines, a part at a time."""
    name = family.name
    labels_memo, render_labels, render_ts = ((_labels_om_memo, _labels_om, _om_timestamp) if openmetrics
                                             else (_labels_004_memo, _labels_004, str))
    for part in family.parts:
        lines: list[str] = []
        if isinstance(part, TableSeries):
            _table_lines(part, name, openmetrics, lines.append)
        else:
            _sample_lines(part, name, labels_memo, render_labels, render_ts, lines.append)
        yield "".join(lines)


def iter_text(samples: Iterable[Sample]) -> Iterator[str]:
    """The text format 0.0.4 one family at a time (HELP, TYPE and its sample lines), so a caller
    can encode and compress it without holding the whole body more than once."""
    return iter_text_families(of_samples(samples))


def iter_text_families(families: Iterable[Family]) -> Iterator[str]:
    for family in families:
        name = family.name
        if family.type == "counter":
            # simpleclient strips `_total` from a counter family's name and writes it back on the
            # HELP/TYPE lines only: a counter sample `x_count` gets `# TYPE x_count_total counter`.
            meta = name if name.endswith("_total") else name + "_total"
        else:
            meta = name
        yield f"# HELP {meta} {_escape_help_004(family.help)}\n# TYPE {meta} {family.type}\n"
        yield from _bodies(family, False)


def render_text(samples: Iterable[Sample]) -> bytes:
    """Prometheus text format 0.0.4, byte for byte as jmx_exporter 0.x serves it."""
    return "".join(iter_text(samples)).encode("utf-8")


def _om_timestamp(ms: int) -> str:
    seconds, millis = divmod(int(ms), 1000)
    if seconds < 0 and millis:
        return f"-{-seconds - 1}.{1000 - millis:03d}"
    return f"{seconds}.{millis:03d}"


def iter_openmetrics(samples: Iterable[Sample], eof: bool = True) -> Iterator[str]:
    """OpenMetrics 1.0 text, one family at a time; `# EOF` last unless `eof` is False.

    Counters as families without `_total` whose samples carry it, untyped as `unknown`,
    timestamps in seconds. A counter whose samples lack `_total` cannot be an OpenMetrics counter
    without renaming the series (which would make OpenMetrics and 0.0.4 disagree on what
    Prometheus stores), so it is written as `unknown` under its own name; so is a counter whose
    family name another family already uses.
    """
    return iter_openmetrics_families(of_samples(samples), eof)


def iter_openmetrics_families(families: Sequence[Family], eof: bool = True) -> Iterator[str]:
    names = {f.name for f in families}
    for f in families:
        name, sample_type = f.name, f.type
        family = name
        if sample_type == "counter":
            family = name[:-6]
            if not name.endswith("_total") or not family or family in names:
                family, sample_type = name, "unknown"
        elif sample_type == "untyped":
            sample_type = "unknown"
        yield f"# TYPE {family} {sample_type}\n# HELP {family} {_escape_label_value(f.help)}\n"
        yield from _bodies(f, True)
    if eof:
        yield "# EOF\n"


def render_openmetrics(samples: Iterable[Sample]) -> bytes:
    """OpenMetrics 1.0 text (see iter_openmetrics), `# EOF` at the end."""
    return "".join(iter_openmetrics(samples)).encode("utf-8")


def choose_content_type(accept: str | None) -> str:
    """As simpleclient: OpenMetrics when any Accept entry is `application/openmetrics-text`."""
    if accept:
        for entry in accept.split(","):
            if entry.split(";", 1)[0].strip() == "application/openmetrics-text":
                return OPENMETRICS_CONTENT_TYPE
    return TEXT_CONTENT_TYPE


def render(samples: Iterable[Sample], content_type: str) -> bytes:
    if content_type == OPENMETRICS_CONTENT_TYPE:
        return render_openmetrics(samples)
    return render_text(samples)
