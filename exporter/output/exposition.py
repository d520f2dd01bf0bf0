"""Samples -> the bytes Prometheus scrapes: text format 0.0.4 and OpenMetrics 1.0.

The 0.0.4 text is what jmx_exporter 0.x prints through Prometheus simpleclient 0.16, quirks
included, because users' parsers and diff tools see them: a trailing comma after every label set,
Java's `Double.toString` for values (`0.0`, `1.0E9`), `# HELP`/`# TYPE` named `<name>_total` for a
counter whose samples are named without it. In 1.x naming the writers are client_java 1.x's
(`naming="1.x"`): no trailing comma, no HELP line for an empty help, counter series named
`<family>_total`. Families come as `exporter.rule_engine.series` ordered and typed them.

This renders one to two million samples per scrape at 40,000 partitions, so the loop does as
little as it can per sample: table members' lines come straight from the columns, through one
line format per table; other label sets and values are formatted once and memoised (the same
label tuples and the same few values, 0.0 and 1.0 above all, come back every poll), within bounds.
"""
from __future__ import annotations

import math
import re
from typing import Iterable, Iterator, Sequence

from kafka_jmx_sidecar.exporter.base.families import PARTITION, TOPIC, Family, MergedTables, TableSeries, of_samples, scaled
from kafka_jmx_sidecar.exporter.base.java_text import java_double
from kafka_jmx_sidecar.exporter.base.model import Sample

# The formats a snapshot holds and a scraper may ask for, by name.
TEXT = "text"
OPENMETRICS = "openmetrics"
FORMATS = (TEXT, OPENMETRICS)

TEXT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

# The memos keep what comes back poll after poll: the label sets of the series outside tables
# (~28,000 at 40,000 partitions, with or without rules) and the few values most series hold (0.0,
# 1.0). A label set kept costs ~400 bytes (its text, and the label tuple the key keeps alive after
# its samples are gone), per format: a memo that starts over past 100,000 cannot keep the hundreds
# of MB the label sets of table families expanded into Samples would. Most distinct values are
# offsets and sizes, new each poll: not worth keeping many.
_LABELS_MEMO_LIMIT = 100_000
_VALUES_MEMO_LIMIT = 50_000
_ZERO = "0.0"
# 0.0 and -0.0 are equal, so they would share a memo slot: only 0.0 is memoised, and a "0.0" from
# the memo is checked for a negative zero.
_value_memo: dict[float, str] = {0.0: _ZERO}
_labels_004_memo: dict[tuple, str] = {}
_labels_om_memo: dict[tuple, str] = {}
_labels_1x_memo: dict[tuple, str] = {}


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
        if len(_value_memo) >= _VALUES_MEMO_LIMIT:
            _value_memo.clear()
            _value_memo[0.0] = _ZERO
        _value_memo[d] = text
    return text


def escape_label_value(v: str) -> str:
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
        text = _label_set([(k, escape_label_value(v)) for k, v in labels], False)
        if len(_labels_004_memo) >= _LABELS_MEMO_LIMIT:
            _labels_004_memo.clear()
        _labels_004_memo[labels] = text
    return text


def _labels_om(labels: tuple) -> str:
    text = _labels_om_memo.get(labels)
    if text is None:
        text = _label_set([(k, escape_label_value(v)) for k, v in labels], True)
        if len(_labels_om_memo) >= _LABELS_MEMO_LIMIT:
            _labels_om_memo.clear()
        _labels_om_memo[labels] = text
    return text


_LEGACY_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def _label_name_1x(name: str) -> str:
    """client_java 1.x writes a label name that is not a classic one (a jmx_exporter safe name
    may hold ':') in quotes."""
    return name if _LEGACY_LABEL.fullmatch(name) else '"' + escape_label_value(name) + '"'


def _labels_1x(labels: tuple) -> str:
    text = _labels_1x_memo.get(labels)
    if text is None:
        text = _label_set([(_label_name_1x(k), escape_label_value(v)) for k, v in labels], True)
        if len(_labels_1x_memo) >= _LABELS_MEMO_LIMIT:
            _labels_1x_memo.clear()
        _labels_1x_memo[labels] = text
    return text


# how each writer prints label sets: (memo, renderer, trailing comma, name writer)
_LABEL_STYLES = {
    "0.x-text": (_labels_004_memo, _labels_004, True, str),   # simpleclient 0.16, text 0.0.4
    "0.x-om": (_labels_om_memo, _labels_om, False, str),      # simpleclient 0.16, OpenMetrics
    "1.x": (_labels_1x_memo, _labels_1x, False, _label_name_1x),  # client_java 1.x, both formats
}


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


def _line_format(part: TableSeries, name: str, style: str):
    """A table member's line as one `str.format` with the topic, the partition number and the
    value text as holes."""
    _, _, commas, label_name = _LABEL_STYLES[style]
    braces = str.maketrans({"{": "{{", "}": "}}"})  # literal text inside a str.format template
    labels = _label_set([(label_name(k).translate(braces), "{0}" if v is TOPIC else "{1}" if v is PARTITION
                          else escape_label_value(v).translate(braces)) for k, v in part.template.labels], not commas)
    if labels:  # the set's own braces are literal too
        labels = "{{" + labels[1:-1] + "}}"
    return (name.translate(braces) + labels + " {2}\n").format


def _table_pieces(part: TableSeries, name: str, style: str) -> Iterator[str]:
    """The hot loop for a table: its present members' lines from the columns, no object per
    member, `_PIECE_LINES` lines to a piece."""
    table, tpl = part.table, part.template
    line = _line_format(part, name, style)
    topics = [escape_label_value(t) for t in table.topics]
    topic, partition, values, present = table.topic, table.partition, table.values, table.present
    fixed, factor = tpl.fixed, tpl.factor
    positions = part.positions
    for start in range(0, len(positions), _PIECE_LINES):
        yield "".join([line(topics[topic[i]], partition[i], go_double(scaled(values[i], fixed, factor)))
                       for i in positions[start:start + _PIECE_LINES] if present[i]])


class _MemberLines:
    """A table's lines, for its members from one place in `positions` to another ("" for a
    member absent this poll)."""

    __slots__ = ("line", "topics", "table", "template", "positions")

    def __init__(self, part: TableSeries, name: str, style: str):
        self.line = _line_format(part, name, style)
        self.topics = [escape_label_value(t) for t in part.table.topics]
        self.table, self.template, self.positions = part.table, part.template, part.positions

    def __call__(self, start: int, end: int) -> list[str]:
        line, topics, table, tpl = self.line, self.topics, self.table, self.template
        topic, partition, values, present = table.topic, table.partition, table.values, table.present
        fixed, factor = tpl.fixed, tpl.factor
        return [line(topics[topic[i]], partition[i], go_double(scaled(values[i], fixed, factor))) if present[i] else ""
                for i in self.positions[start:end]]


_MERGED_PIECE = 32_768  # members per piece of a MergedTables' text
# Lines per piece of any other part's text. A poll's new body is rendered while the previous
# snapshot is still served, so what a piece holds at once (its lines, their text joined, its UTF-8
# copy) adds to the sidecar's peak: a whole 40,000-partition family at once was ~10 MB of it.
# Smaller pieces cost a little more per piece and no less per line.
_PIECE_LINES = 4096


def _merged_pieces(merged: MergedTables, name: str, style: str) -> Iterator[str]:
    """Several tables' lines interleaved in visiting order, a piece of `merged.order` at a time
    (the 400,000 lines of default naming's two merged families are never all held at once): for
    each piece, each part's next lines in its own order, then taken part by part as the piece
    says."""
    parts = [_MemberLines(part, name, style) for part in merged.parts]
    done = [0] * len(parts)  # each part's members written so far
    order = merged.order
    for start in range(0, len(order), _MERGED_PIECE):
        piece = order[start:start + _MERGED_PIECE]
        runs = []
        for k, lines in enumerate(parts):
            n = piece.count(k)
            runs.append(iter(lines(done[k], done[k] + n)))
            done[k] += n
        yield "".join(map(next, map(runs.__getitem__, piece)))


def _bodies(family: Family, name: str, style: str, openmetrics: bool) -> Iterator[str]:
    """A family's sample lines named `name`, a part at a time: label sets in `style` (a key of
    _LABEL_STYLES), timestamps in OpenMetrics' seconds when `openmetrics`."""
    labels_memo, render_labels, _, _ = _LABEL_STYLES[style]
    render_ts = _om_timestamp if openmetrics else str
    for part in family.parts:
        if isinstance(part, MergedTables):
            yield from _merged_pieces(part, name, style)
        elif isinstance(part, TableSeries):
            yield from _table_pieces(part, name, style)
        else:
            for start in range(0, len(part), _PIECE_LINES):
                lines: list[str] = []
                _sample_lines(part[start:start + _PIECE_LINES], name, labels_memo, render_labels, render_ts,
                              lines.append)
                yield "".join(lines)


def iter_text(samples: Iterable[Sample]) -> Iterator[str]:
    """The text format 0.0.4 one family at a time (HELP, TYPE and its sample lines), so a caller
    can encode and compress it without holding the whole body more than once."""
    return iter_text_families(of_samples(samples))


def iter_text_families(families: Iterable[Family], naming: str = "0.x") -> Iterator[str]:
    """The text format 0.0.4 as jmx_exporter 0.x (simpleclient 0.16) or 1.x (client_java 1.x)
    writes it. 1.x: no trailing comma after labels, no HELP line for an empty help, and a
    counter family `x` (its name never ends in `_total` there) is written as `x_total`."""
    if naming == "1.x":
        for family in families:
            name = family.name + "_total" if family.type == "counter" else family.name
            head = f"# HELP {name} {_escape_help_004(family.help)}\n" if family.help else ""
            yield f"{head}# TYPE {name} {family.type}\n"
            yield from _bodies(family, name, "1.x", False)
        return
    for family in families:
        name = family.name
        if family.type == "counter":
            # simpleclient strips `_total` from a counter family's name and writes it back on the
            # HELP/TYPE lines only: a counter sample `x_count` gets `# TYPE x_count_total counter`.
            meta = name if name.endswith("_total") else name + "_total"
        else:
            meta = name
        yield f"# HELP {meta} {_escape_help_004(family.help)}\n# TYPE {meta} {family.type}\n"
        yield from _bodies(family, name, "0.x-text", False)


def render_text(samples: Iterable[Sample]) -> bytes:
    """Prometheus text format 0.0.4, byte for byte as jmx_exporter 0.x serves it."""
    return "".join(iter_text(samples)).encode("utf-8")


def _om_timestamp(ms: int) -> str:
    seconds, millis = divmod(int(ms), 1000)
    if seconds < 0 and millis:
        return f"-{-seconds - 1}.{1000 - millis:03d}"
    return f"{seconds}.{millis:03d}"


def iter_openmetrics(samples: Iterable[Sample], eof: bool = True) -> Iterator[str]:
    """OpenMetrics 1.0 text, one family at a time; `# EOF` last unless `eof` is False (see
    iter_openmetrics_families)."""
    return iter_openmetrics_families(of_samples(samples), eof)


def openmetrics_names(name: str, sample_type: str, naming: str = "0.x") -> tuple[str, str, str]:
    """(family name, OpenMetrics type, samples' name) of a family named `name` by the rules: a
    counter family is named without `_total` (in 0.x its samples keep their own name, in 1.x they
    are `<family>_total`); untyped is `unknown`."""
    family = series = name
    if sample_type == "counter":
        if naming == "1.x":
            series = name + "_total"
        elif name.endswith("_total"):
            family = name[:-6]
    elif sample_type == "untyped":
        sample_type = "unknown"
    return family, sample_type, series


def openmetrics_series(name: str, labels: Iterable[tuple[str, str]]) -> str:
    """A sample's `name{k="v",...}` as OpenMetrics writes it."""
    return name + _label_set([(k, escape_label_value(v)) for k, v in labels], True)


def iter_openmetrics_families(families: Sequence[Family], eof: bool = True, naming: str = "0.x") -> Iterator[str]:
    """OpenMetrics 1.0 text as jmx_exporter 0.x (simpleclient 0.16) or 1.x (client_java 1.x)
    writes it: TYPE before HELP, untyped as `unknown`, timestamps in seconds. A counter family is
    named without `_total`: in 0.x its samples keep their own names (with `_total` or not, as the
    rule named them: simpleclient writes them as they are), in 1.x they are written `<family>_total`.
    1.x writes no HELP line for an empty help; 0.x always does."""
    one_x = naming == "1.x"
    for f in families:
        family, sample_type, series = openmetrics_names(f.name, f.type, naming)
        if one_x and not f.help:
            yield f"# TYPE {family} {sample_type}\n"
        else:
            yield f"# TYPE {family} {sample_type}\n# HELP {family} {escape_label_value(f.help)}\n"
        yield from _bodies(f, series, "1.x" if one_x else "0.x-om", True)
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
