"""A configuration file as every configuration of the sidecar is read: its text, its YAML with
the line of every key path, errors that say `file:line: key: problem; fix`, and `${NAME}`.

    file = ConfigFile.read("exporter.yml")
    file.data["rules"]                          # what PyYAML built (YAML 1.1, like SnakeYAML)
    raise file.error(("rules", 0, "name"), "is not text", "quote it")

The jmx_exporter file (rule_engine/config.py with its `httpServer:` block and the `sidecar:`
key) and the Prometheus web-config file all go through here, so one value is followed from the
file to its use in one direction, and an unset variable is the same error everywhere.
"""
from __future__ import annotations

import os
import re
from typing import Any, Mapping

import yaml

_REFERENCE = re.compile(r"\$\{([^}]*)\}")


class ConfigError(ValueError):
    """What is wrong, where (file, YAML line, key) and what to do."""

    def __init__(self, source: str, line: int | None, key: str, problem: str, fix: str):
        self.source, self.line, self.key, self.problem, self.fix = source, line, key, problem, fix
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {key}: {problem}; {fix}" if key else f"{where}: {problem}; {fix}")


class ConfigErrors(ConfigError):
    """Every error found in a file (or a file and the files it names), one a line, in the order
    found; caught as a ConfigError, so each place that reports one reports them all."""

    def __init__(self, errors: list[ConfigError]):
        first = errors[0]
        super().__init__(first.source, first.line, first.key, first.problem, first.fix)
        self.errors = errors
        self.args = ("\n".join(str(e) for e in errors),)


class Problems:
    """Gathers the errors of independent parts of a file, so one run names them all:

        problems = Problems()
        value = problems.check(parse_part, raw)   # None when it failed
        problems.raise_any()                      # ConfigErrors with each error found
    """

    def __init__(self) -> None:
        self.errors: list[ConfigError] = []

    def check(self, parse, *args, **kwargs):
        try:
            return parse(*args, **kwargs)
        except ConfigErrors as e:
            self.errors.extend(e.errors)
        except ConfigError as e:
            self.errors.append(e)
        return None

    def add(self, error: ConfigError) -> None:
        self.errors.extend(error.errors if isinstance(error, ConfigErrors) else [error])

    def raise_any(self) -> None:
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise ConfigErrors(self.errors)


class ConfigFile:
    """The data of one YAML file, where each key path stands, and the environment its `${NAME}`
    values are read from."""

    def __init__(self, source: str, data: Any = None, lines: Mapping[tuple, int] | None = None,
                 env: Mapping[str, str] | None = None, duplicates: tuple[tuple[tuple, int, int], ...] = ()):
        self.source, self.data = source, data
        self.lines: Mapping[tuple, int] = lines or {}
        self.env: Mapping[str, str] = os.environ if env is None else env
        # (key path, its first line, the line that repeats it): YAML 1.1 loaders, SnakeYAML in
        # jmx_exporter as PyYAML here, keep the last value without a word.
        self.duplicates = duplicates

    @classmethod
    def read(cls, path: str | os.PathLike, env: Mapping[str, str] | None = None) -> "ConfigFile":
        source = os.fspath(path)
        try:
            with open(source, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise ConfigError(source, None, "", f"cannot read the file ({e.strerror})",
                              "check the path and its permissions") from e
        except UnicodeDecodeError as e:
            raise ConfigError(source, None, "", f"not UTF-8 text (byte {e.start})", "save the file as UTF-8") from e
        return cls.parse(text, source, env)

    @classmethod
    def parse(cls, text: str, source: str = "<string>", env: Mapping[str, str] | None = None) -> "ConfigFile":
        # The data comes from PyYAML's constructor (anchors, merge keys and all), the lines from a
        # walk over the nodes the same parse composed.
        loader = yaml.SafeLoader(text)
        duplicates: list[tuple[tuple, int, int]] = []
        try:
            node = loader.get_single_node()
            if node is not None:  # before construction, which merges `<<:` keys into the mappings
                _find_duplicates(node, (), duplicates)
            data = loader.construct_document(node) if node is not None else None
        except yaml.YAMLError as e:
            raise _yaml_error(e, source) from e
        finally:
            loader.dispose()
        lines: dict[tuple, int] = {}
        if node is not None:
            _index(node, (), lines)
        return cls(source, data, lines, env, tuple(sorted(duplicates, key=lambda d: d[2])))

    def line(self, path: tuple) -> int | None:
        """The YAML line of a key path, or of its nearest parent that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get(())

    def where(self, path: tuple) -> str:
        """`file:line` of a key path (`file` when the file has no line for it)."""
        line = self.line(path)
        return f"{self.source}:{line}" if line else self.source

    def error(self, path: tuple, problem: str, fix: str) -> ConfigError:
        return ConfigError(self.source, self.line(path), path_text(path), problem, fix)

    def warning(self, path: tuple, message: str) -> str:
        return f"{self.where(path)}: {path_text(path)}: {message}"

    def duplicate_warnings(self) -> list[str]:
        """One line per repeated key, at the line that repeats it."""
        return [f"{self.source}:{line}: {path_text(path)}: duplicate key (first at line {first}); the value "
                f"here counts, as in jmx_exporter, and the first is ignored: remove one of them"
                for path, first, line in self.duplicates]

    def refuse_duplicates(self) -> None:
        """For formats whose own readers refuse a repeated key (the exporter-toolkit's strict YAML)."""
        for path, first, line in self.duplicates:
            raise ConfigError(self.source, line, path_text(path), f"duplicate key (first at line {first})",
                              "remove one of them")

    def variable(self, path: tuple, text: str, trim: bool = False) -> str:
        """`text`, or when it is `${NAME}` as a whole, environment variable NAME; unset is an error.

        jmx_exporter 1.x's httpServer block (`trim`) also takes `  ${ NAME }  `, trims the value
        and refuses a blank one."""
        m = _REFERENCE.fullmatch(text.strip() if trim else text)
        if m is None or not m.group(1):  # `${}` is text
            return text
        name = m.group(1).strip() if trim else m.group(1)
        if not name:
            raise self.error(path, f"{text!r} names no environment variable", "write ${NAME} or the value itself")
        value = self.env.get(name)
        if value is None:
            raise self.error(path, f"environment variable {name} is not set",
                             f"export {name} in the sidecar's environment or write the value itself")
        if not trim:
            return value
        if not value.strip():
            raise self.error(path, f"environment variable {name} is empty", f"give {name} a value")
        return value.strip()


def kind(value: Any) -> str:
    """A YAML value as an error message names what was found instead of what was expected."""
    if value is None:
        return "an empty value"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    return f"the value {value!r}"


def path_text(path: tuple) -> str:
    """("rules", 0, "name") -> "rules[0].name"."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (("." if out else "") + str(p))
    return out


def _index(node: yaml.Node, path: tuple, lines: dict[tuple, int]) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = _scalar(key_node)  # as the data has it: `1:` is the number 1
                lines.setdefault(path + (key,), key_node.start_mark.line + 1)
                _index(value_node, path + (key,), lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(item, path + (i,), lines)


def _find_duplicates(node: yaml.Node, path: tuple, out: list) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key, line = _scalar(key_node), key_node.start_mark.line + 1
            if key in seen:
                out.append((path + (key,), seen[key], line))
            else:
                seen[key] = line
            _find_duplicates(value_node, path + (key,), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _find_duplicates(item, path + (i,), out)


def _scalar(node: yaml.ScalarNode) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node)
    except yaml.YAMLError:
        return node.value
    finally:
        loader.dispose()


def _yaml_error(e: yaml.YAMLError, source: str) -> ConfigError:
    """PyYAML's error with its line; when the problem shows only at a later line (an unclosed
    bracket or quote reported at the end of the file), also where the construct began."""
    problem_mark = getattr(e, "problem_mark", None)
    context_mark = getattr(e, "context_mark", None)
    mark = problem_mark or context_mark
    problem = getattr(e, "problem", None) or str(e)
    context = getattr(e, "context", None)
    if context and context_mark and problem_mark and context_mark.line != problem_mark.line:
        problem += f" ({context} that starts at line {context_mark.line + 1})"
    return ConfigError(source, mark.line + 1 if mark else None, "", f"invalid YAML: {problem}",
                       "fix the YAML syntax there")
