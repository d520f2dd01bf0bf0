"""`sidecar.reassignment`: the reassignment traffic and progress series (exporter/reassignment/stage.py).

    sidecar:
      reassignment:
        rateWindowSeconds: 60   # the rates behind the ETA and the throttle's use: over this long

`reassignment: {}` turns them on with the defaults. The traffic split needs only the broker's JMX;
progress, throttles and the estimate for brokers before 2.5 need `sidecar.admin` (with its
`logDirs`, the default).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

DEFAULT_RATE_WINDOW_SECONDS = 60.0


@dataclass(frozen=True)
class ReassignmentSettings:
    rate_window_seconds: float = DEFAULT_RATE_WINDOW_SECONDS


def reassignment_settings(raw: Any, error: Callable[..., Exception]) -> ReassignmentSettings:
    """`sidecar.reassignment` validated; `error(path, problem, fix)` makes the ConfigError."""
    where = ("sidecar", "reassignment")
    if not isinstance(raw, Mapping):
        raise error(where, f"must be a mapping, got {type(raw).__name__}",
                    "write `reassignment: {}` for the defaults, or indented rateWindowSeconds: N")
    for key in raw:
        if key != "rateWindowSeconds":
            raise error(where + (key,), "unknown setting", "use rateWindowSeconds")
    window = raw.get("rateWindowSeconds", DEFAULT_RATE_WINDOW_SECONDS)
    if isinstance(window, bool) or not isinstance(window, (int, float)) or window <= 0:
        raise error(where + ("rateWindowSeconds",), f"must be a number of seconds > 0, got {window!r}",
                    "give the span the rates are measured over, e.g. 60 (a few poll intervals)")
    return ReassignmentSettings(float(window))
