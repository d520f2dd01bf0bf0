"""`sidecar.reassignment`: the reassignment traffic and progress series (exporter/reassignment/stage.py).
Its keys: REASSIGNMENT below; `reassignment: {}` turns them on with the defaults. The traffic split needs only the broker's JMX;
progress, throttles and the estimate for brokers before 2.5 need `sidecar.admin` (with its
`logDirs`, the default).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kafka_jmx_sidecar.exporter.base.definitions import Block, Key, number

DEFAULT_RATE_WINDOW_SECONDS = 60.0


@dataclass(frozen=True)
class ReassignmentSettings:
    rate_window_seconds: float = DEFAULT_RATE_WINDOW_SECONDS


REASSIGNMENT = Block(("sidecar", "reassignment"), "Reassignment traffic and progress series; progress, throttles "
                     "and the estimate before Kafka 2.5 need sidecar.admin (with its logDirs).", keys=(
    Key("rateWindowSeconds", number("seconds"), "The rates behind the ETA and the throttle's use are measured over "
        "this long.", default=DEFAULT_RATE_WINDOW_SECONDS,
        fix="give the span the rates are measured over, e.g. 60 (a few poll intervals)"),
), example="""\
sidecar:
  reassignment:
    rateWindowSeconds: 60
  admin:
    bootstrapServers: kafka-0.kafka:9092
""", shape_fix="write `reassignment: {}` for the defaults, or indented rateWindowSeconds: N")


def reassignment_settings(raw: Any, error: Callable[..., Exception]) -> ReassignmentSettings:
    """`sidecar.reassignment` validated; `error(path, problem, fix)` makes the ConfigError."""
    return ReassignmentSettings(**REASSIGNMENT.read(raw, error))
