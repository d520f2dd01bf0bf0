"""YAML with the line of every key, so configuration errors can say file:line."""
from __future__ import annotations

from typing import Any, Callable

import yaml

from exporter.rule_engine.config import read_config_text, yaml_error


def load_yaml_file(path: str) -> tuple[Any, Callable[[tuple], int | None]]:
    return parse_yaml(read_config_text(path), path)


def parse_yaml(text: str, source: str) -> tuple[Any, Callable[[tuple], int | None]]:
    """The document and a function from a key path, e.g. ("tls_server_config", "cert_file"), to
    its line (or the nearest enclosing key's)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise yaml_error(e, source) from e
    lines: dict[tuple, int] = {}

    def index(n: yaml.Node, path: tuple) -> None:
        lines.setdefault(path, n.start_mark.line + 1)
        if isinstance(n, yaml.MappingNode):
            for k, v in n.value:
                key = path + (k.value,)
                lines.setdefault(key, k.start_mark.line + 1)
                index(v, key)
        elif isinstance(n, yaml.SequenceNode):
            for i, item in enumerate(n.value):
                index(item, path + (i,))

    if node is not None:
        index(node, ())

    def line_of(path: tuple) -> int | None:
        while path:
            if path in lines:
                return lines[path]
            path = path[:-1]
        return lines.get(())

    return data, line_of
