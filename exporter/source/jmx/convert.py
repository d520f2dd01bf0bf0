"""Java values -> the plain Python values of exporter/base/model.py.

Two routes to the same values:
- `split_records()` and `decode_record()` split the text SidecarJmx.read() produced (one string
  per batch; the format is documented at the top of SidecarJmx.java).
- `to_python()` converts one JPype object (CompositeData, TabularData, and every value on the
  JPype-only route used when the JVM has no compiler).

Mapping (as jmx_exporter's JmxScraper sees values): Integer/Long/Short/Byte/BigInteger/
AtomicInteger/AtomicLong -> int; Double -> float; Float and other Numbers -> `JavaNumber` (their
doubleValue(), with the toString() rules are matched against) unless that text is the double's;
Boolean -> bool; String -> str; enum -> its toString() (TimeUnit -> "SECONDS"); Date ->
datetime (UTC); Optional -> its content or None; CompositeData -> Composite (keys sorted);
TabularData -> Tabular (index names, one Composite per row); null -> None. Arrays and other types
become the markers ARRAY and Unsupported(type): never a sample, and (with
autoExcludeObjectNameAttributes) not read again.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from kafka_jmx_sidecar.exporter.base.java_text import java_double, java_float
from kafka_jmx_sidecar.exporter.base.model import Composite, JavaNumber, Tabular

RS = "\x1e"
US = "\x1f"
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class _Marker:
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


MISSING = _Marker("MISSING")   # the MBean server did not return the attribute (its getter threw)
ARRAY = _Marker("ARRAY")       # arrays are not exported (jmx_exporter: "arrays are unsupported")


class Unsupported:
    """A value of a type jmx_exporter does not export (e.g. a Map, a UUID, a Character)."""

    __slots__ = ("type_name",)

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"Unsupported({self.type_name})"


def _number(value: float, text: str) -> Any:
    """A number rules see as `text`: a plain float when that is its double's text anyway."""
    return value if text == java_double(value) else JavaNumber(value, text)


def _float32(value: float) -> Any:
    """A Float: rules match `Float.toString`, which has fewer digits than the double's."""
    return _number(value, java_float(value))


def is_marker(v: Any) -> bool:
    return v is MISSING or v is ARRAY or type(v) is Unsupported


def date_from_millis(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


def decode_record(rec: str, complex_values: Sequence[Any]) -> tuple[str, list]:
    """One record of SidecarJmx.read()'s text -> (status, values in request order).

    status: "o" read, "g" gone, "e<message>" failed.
    """
    fields = rec.split(US)
    status = fields[0]
    if status != "o":
        return status, []
    values: list = []
    add = values.append
    for f in fields[1:]:
        tag = f[0]
        if tag == "i":
            add(int(f[1:]))
        elif tag == "d":
            add(float(f[1:]))
        elif tag == "f":
            add(_float32(float(f[1:])))
        elif tag == "N":
            number, _, text = f[1:].partition(" ")
            add(_number(float(number), text))
        elif tag == "s" or tag == "e":
            add(f[1:])
        elif tag == "n":
            add(None)
        elif tag == "T":
            add(True)
        elif tag == "F":
            add(False)
        elif tag == "-":
            add(MISSING)
        elif tag == "x":
            add(to_python(complex_values[int(f[1:])]))
        elif tag == "t":
            add(date_from_millis(int(f[1:])))
        elif tag == "a":
            add(ARRAY)
        else:  # "u"
            add(Unsupported(f[1:]))
    return status, values


def split_records(text: str | None, count: int) -> list[str]:
    """SidecarJmx text -> one string per MBean (count of them)."""
    if not count:
        return []
    records = text.split(RS) if text is not None else []
    if len(records) != count:
        raise ValueError(f"helper returned {len(records)} records for {count} MBeans")
    return records


def decode_infos(text: str | None, count: int) -> list[tuple[str, str, tuple[tuple[str, str, str | None], ...]]]:
    """SidecarJmx.infos() text -> [(status, class name, ((attr, type, description or None), ...))]."""
    if not count:
        return []
    out = []
    for rec in text.split(RS):
        fields = rec.split(US)
        if fields[0] != "o":
            out.append((fields[0], "", ()))
            continue
        attrs = tuple((fields[i], fields[i + 1], None if fields[i + 2] == "n" else fields[i + 2][1:])
                      for i in range(2, len(fields) - 2, 3))
        out.append(("o", fields[1], attrs))
    if len(out) != count:
        raise ValueError(f"helper returned {len(out)} MBeanInfo records for {count} MBeans")
    return out


# --- JPype objects ------------------------------------------------------------------------------

_types: dict[str, Any] = {}


def _t(name: str) -> Any:
    cls = _types.get(name)
    if cls is None:
        import jpype

        cls = _types[name] = jpype.JClass(name)
    return cls


_INTEGRAL = ("java.lang.Integer", "java.lang.Long", "java.lang.Short", "java.lang.Byte",
             "java.math.BigInteger", "java.util.concurrent.atomic.AtomicInteger",
             "java.util.concurrent.atomic.AtomicLong")


def to_python(v: Any) -> Any:
    """One JPype value -> Python (see the module docstring); markers for arrays/unsupported."""
    if v is None:
        return None
    import jpype

    if isinstance(v, bool):
        return v
    cls = v.getClass() if isinstance(v, jpype.JObject) else None
    if cls is None:  # already Python (JPype converted a primitive)
        return v
    name = str(cls.getName())
    if name == "java.lang.String":
        return str(v)
    if name == "java.lang.Boolean":
        return bool(v.booleanValue())
    if name in _INTEGRAL:
        return int(str(v.toString()))
    if name == "java.lang.Double":
        return float(v.doubleValue())
    if name == "java.lang.Float":
        return _float32(float(v.doubleValue()))
    if isinstance(v, _t("java.lang.Number")):
        return _number(float(v.doubleValue()), str(v.toString()))
    if isinstance(v, _t("java.util.Date")):
        return date_from_millis(int(v.getTime()))
    if isinstance(v, _t("javax.management.openmbean.CompositeData")):
        return composite(v)
    if isinstance(v, _t("javax.management.openmbean.TabularData")):
        return tabular(v)
    if cls.isArray():
        return ARRAY
    if isinstance(v, _t("java.util.Optional")):
        return to_python(v.orElse(None))
    if cls.isEnum():  # as jmx_exporter tests it: a constant with a body is not exported
        return str(v.toString())
    return Unsupported(name)


def composite(v: Any) -> Composite:
    """CompositeData -> Composite, keys in the CompositeType's (sorted) order. The type's
    description goes along (`Composite.description`): jmx_exporter describes every item with it."""
    out = Composite()
    ctype = v.getCompositeType()
    description = ctype.getDescription()
    out.description = None if description is None else str(description)
    for key in ctype.keySet():
        k = str(key)
        out[k] = to_python(v.get(k))
    return out


def tabular(v: Any) -> Tabular:
    """TabularData -> Tabular: index column names and one Composite per row (server order)."""
    index = tuple(str(k) for k in v.getTabularType().getIndexNames())
    rows = []
    for row in v.values():
        rows.append(composite(row) if isinstance(row, _t("javax.management.openmbean.CompositeData")) else Composite())
    return Tabular(index=index, rows=tuple(rows))

