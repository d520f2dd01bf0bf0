"""The configuration's keys as definitions: each key once, with its type, default, one line of what
it does, the fix its error shows and whether a reload applies it. The parsers read a block through
its definition (`Block.read`), so a key cannot be parsed without being documented; the reference
(docs/configuration.md) and the JSON Schema are generated from the same definitions
(exporter/config/reference.py). A block's definition sits beside the parser that uses it.

    ARCHIVE = Block(("sidecar", "archive"), "What each poll knew, on disk.", keys=(
        Key("directory", text("a directory path"), "Where the files go.", required=True,
            fix="give a directory the sidecar may write"),
        Key("retentionHours", number("hours"), "Files older than this are deleted.", default=168),
    ))
    values = ARCHIVE.read(raw, file.error)     # {"directory": ..., "retention_hours": 168.0}

Errors name the file, line and key, `must be <the type's words>, got <value>; <fix>`, and every
wrong key of a block is reported in one run (check-config names all of a file's errors).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from kafka_jmx_sidecar.exporter.base.config_file import Problems, kind

# Whether a running sidecar applies a key when its file changes.
APPLIES = "applies at once"
RESTART = "needs a restart"
FIXED = "cannot change: a file that changes it is refused (restart to change it)"
WATCHED = "applies when the file changes"


@dataclass(frozen=True)
class Type:
    """What a value must be: `words` for errors and the reference, `check`, the JSON Schema, and
    `convert` from the YAML value to the settings' value."""

    words: str
    check: Callable[[Any], bool]
    schema: Mapping[str, Any]
    convert: Callable[[Any], Any] = lambda v: v
    problem: Callable[[Any], str] | None = None  # the error's words for a wrong value; by default "must be ..."

    def wrong(self, value: Any) -> str:
        return self.problem(value) if self.problem else f"must be {self.words}, got {value!r}"


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _whole(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def number(unit: str = "", minimum: float = 0, inclusive: bool = False, as_float: bool = True,
           maximum: float | None = None) -> Type:
    """A number above `minimum` (or at least it, `inclusive`), and at most `maximum`; a float, or as written."""
    words = f"a number{' of ' + unit if unit else ''} {'>=' if inclusive else '>'} {minimum:g}" + (
        f" and at most {maximum:g}" if maximum is not None else "")
    bounds = {"minimum" if inclusive else "exclusiveMinimum": minimum,
              **({"maximum": maximum} if maximum is not None else {})}
    return Type(words, lambda v: _number(v) and (v >= minimum if inclusive else v > minimum)
                and (maximum is None or v <= maximum), {"type": "number", **bounds}, float if as_float else (lambda v: v))


def whole(minimum: int, maximum: int | None = None) -> Type:
    words = f"a whole number from {minimum} to {maximum}" if maximum is not None else f"a whole number >= {minimum}"
    bounds = {"minimum": minimum, **({"maximum": maximum} if maximum is not None else {})}
    return Type(words, lambda v: _whole(v) and minimum <= v and (maximum is None or v <= maximum),
                {"type": "integer", **bounds})


def choice(*values: str, words: str | None = None, problem: Callable[[Any], str] | None = None) -> Type:
    return Type(words or "one of " + ", ".join(values), lambda v: v in values, {"enum": list(values)},
                problem=problem)


def text(words: str = "a text value") -> Type:
    """A non-empty string."""
    return Type(words, lambda v: isinstance(v, str) and bool(v.strip()), {"type": "string", "minLength": 1}, str)


FLAG = Type("true or false", lambda v: isinstance(v, bool), {"type": "boolean"})


def text_list(words: str, item: Callable[[Any], bool] = lambda v: isinstance(v, str) and bool(v),
              non_empty: bool = False, item_schema: Mapping | None = None) -> Type:
    schema = {"type": "array", "items": dict(item_schema or {"type": "string", "minLength": 1}),
              **({"minItems": 1} if non_empty else {})}
    return Type(words, lambda v: isinstance(v, (list, tuple)) and (bool(v) or not non_empty) and all(map(item, v)),
                schema, tuple)


def custom(words: str, check: Callable[[Any], bool], schema: Mapping, convert: Callable[[Any], Any] = lambda v: v,
           problem: Callable[[Any], str] | None = None) -> Type:
    return Type(words, check, schema, convert, problem)




@dataclass(frozen=True)
class Key:
    """One key of a block. `block` (a nested mapping) replaces `type`; `parse(value, error, raw)`
    reads such a block into its settings object (raw: the mapping the key is in)."""

    name: str
    type: Type | None
    doc: str
    default: Any = None  # the YAML value when absent (None: none), converted like a given one
    default_doc: str | None = None  # the default in words, where it is not one value
    required: bool = False
    fix: str | None = None  # what an error on this key tells to do; by default "set KEY to <words>"
    reload: str | None = None  # None: the block's
    field: str | None = None  # the settings' field; by default the key in snake_case
    block: "Block | None" = None
    parse: Callable[..., Any] | None = None
    since: str | None = None  # where only some releases of jmx_exporter know it

    @property
    def attr(self) -> str:
        return self.field or "".join("_" + c.lower() if c.isupper() else c for c in self.name)

    def fix_text(self) -> str:
        return self.fix or f"set {self.name} to {self.type.words if self.type else 'a mapping'}"


@dataclass(frozen=True)
class Block:
    """A mapping of the file: its keys, those that are refused with a reason (`refused`: key ->
    fix) or ignored with a warning (`ignored`: key -> why), an example for the reference."""

    path: tuple
    doc: str
    keys: tuple[Key, ...]
    example: str = ""
    reload: str = APPLIES
    shape_fix: str = "indent key: value lines under it"
    refused: Mapping[str, str] = field(default_factory=dict)
    ignored: Mapping[str, str] = field(default_factory=dict)
    unknown_hint: Callable[[str], str] = lambda key: ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", {k.name: k for k in self.keys})

    def key(self, name: str) -> Key:
        return self.by_name[name]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.keys)

    def walk(self):
        """This block and every block nested in it, depth first."""
        yield self
        for key in self.keys:
            if key.block is not None:
                yield from key.block.walk()

    def use_fix(self) -> str:
        names = sorted(self.names)
        return f"use {names[0]}" if len(names) == 1 else f"use one of {', '.join(names)}"

    def read(self, raw: Any, error: Callable[..., Exception], where: tuple | None = None) -> dict[str, Any]:
        """The block's values by field name (every key: the default where absent or null), or a
        ConfigError (ConfigErrors: one per wrong key)."""
        where = self.path if where is None else where
        if not isinstance(raw, Mapping):
            raise error(where, f"must be a mapping, not {kind(raw)}", self.shape_fix)
        problems = Problems()  # in the file's order, then the keys it lacks
        found: dict[str, Any] = {}
        for name in raw:
            if name in self.refused:
                problems.add(error(where + (name,), "is not supported here", self.refused[name]))
            elif name not in self.by_name:
                problems.add(error(where + (name,), "unknown setting" + self.unknown_hint(str(name)), self.use_fix()))
            else:
                found[name] = problems.check(self._value, self.by_name[name], raw, error, where)
        values = {key.attr: found[key.name] if key.name in found else problems.check(self._value, key, raw, error, where)
                  for key in self.keys}
        problems.raise_any()
        return values

    def _value(self, key: Key, raw: Mapping, error: Callable[..., Exception], where: tuple) -> Any:
        value = raw.get(key.name)
        if value is None:
            if key.required:
                raise error(where + (key.name,), "is missing", key.fix_text())
            if key.default is None:
                return None
            value = key.default
        if key.parse is not None:
            return key.parse(value, error, raw)
        if key.block is not None:
            return key.block.read(value, error, where + (key.name,))
        if not key.type.check(value):
            raise error(where + (key.name,), key.type.wrong(value), key.fix_text())
        return key.type.convert(value)

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the block: its keys, nothing else (null stands for absent)."""
        properties = {}
        for key in self.keys:
            s = key.block.schema() if key.block is not None else dict(key.type.schema)
            if not key.required:
                s = _or_null(s)
            if key.default is not None:
                s["default"] = key.default
            properties[key.name] = {"description": key.doc, **s}
        for name, why in {**self.ignored}.items():
            properties[name] = {"description": f"ignored, with a warning: {why}"}
        out = {"type": "object", "properties": properties, "additionalProperties": False}
        required = [k.name for k in self.keys if k.required]
        return {**out, "required": required} if required else out


def _or_null(schema: dict) -> dict:
    kinds = schema.get("type")
    if isinstance(kinds, str):
        return {**schema, "type": [kinds, "null"]}
    if "enum" in schema:
        return {**schema, "enum": [*schema["enum"], None]}
    return schema
