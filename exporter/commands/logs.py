"""The log lines every command writes to stderr, in the formats Prometheus exporters offer
(`--log.format`): `text` for people, `logfmt` and `json` for log pipelines. The field names are
stable, since pipelines parse them: ts (RFC 3339, UTC, milliseconds), level, logger, msg, and err
(the exception's one-line summary) when a record carries one. A record logged with
`extra={"fields": {...}}` (the backfill's progress) carries those fields after them, as JSON
values in json (None: null) and as text in logfmt (None: left out; a list: comma-separated)."""
from __future__ import annotations

import json
import logging
import sys
import time

LEVELS = ("debug", "info", "warning", "error")
FORMATS = ("text", "logfmt", "json")


def _fields(record: logging.LogRecord) -> dict:
    t = time.gmtime(record.created)
    out = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{int(record.msecs):03d}Z",
           "level": record.levelname.lower(), "logger": record.name, "msg": record.getMessage()}
    if record.exc_info and record.exc_info[1] is not None:
        e = record.exc_info[1]
        out["err"] = f"{type(e).__name__}: {e}"
    for key, value in (getattr(record, "fields", None) or {}).items():
        out.setdefault(key, value)  # never over the fields above
    return out


class LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{k}={_logfmt_value(_text(v))}" for k, v in _fields(record).items() if v is not None)


def _text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v))
    return str(v)


def _logfmt_value(v: str) -> str:
    # quoted when logfmt parsers would split or misread it; newlines escaped to keep one line a record
    if v and not any(c in v for c in ' ="\\\n\t\r'):
        return v
    return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace(
        "\t", "\\t").replace("\r", "\\r") + '"'


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_fields(record), ensure_ascii=False)


class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a record comes (a caller in the same process may
    have replaced it since, as pytest does), never to a stream closed since."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


_format = "text"  # the format configure() set


def failure(text: str, stream=None, logger: str = "kafka_jmx_sidecar.cli") -> None:
    """A command's one-line failure: as it is in text (for people: `stream`, stderr by default),
    a log record at error level in logfmt and json, so a log pipeline never meets a line that is
    not one of its records."""
    if _format == "text":
        (stream or sys.stderr).write(text.rstrip("\n") + "\n")
    else:
        logging.getLogger(logger).error("%s", text.rstrip("\n"))


def configure(level: str = "info", fmt: str = "text") -> None:
    """Route every logger to stderr at `level` in `fmt` (replacing handlers set before)."""
    global _format
    _format = fmt
    handler = _Stderr()
    if fmt == "logfmt":
        handler.setFormatter(LogfmtFormatter())
    elif fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:  # text: the traceback of a logged exception stays, for people reading it
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
