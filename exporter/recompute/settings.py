"""`sidecar.recompute`: which health profile the sidecar publishes whatever the broker's release,
and what it replaces (docs/recompute.md documents these keys):

    sidecar:
      recompute:
        semantics: kafka-3.7      # a broker-gauge profile of mbeans/health.py
        mode: outdated            # missing | outdated | all | off
        minInsyncReplicas:        # used when no Admin API is configured (sidecar.admin)
          default: 1
          topics: {orders: 2}

Without the `recompute` key nothing is recomputed (the output is jmx_exporter's); with it, `mode`
defaults to `outdated` and `semantics` to kafka-3.7.

In the cluster-wide mode (`sidecar.mode: cluster`, exporter/source/cluster.py) the same key says
which profile judges every partition: there `topic-command` is a choice too (kafka-topics.sh
judges the whole cluster, as that mode does), and `mode` has no meaning (nothing is read from a
broker to keep or replace).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from kafka_jmx_sidecar.mbeans.health import DEFAULT_PROFILE, PROFILES, Profile

MODES = ("missing", "outdated", "all", "off")
DEFAULT_MODE = "outdated"
# Broker gauges only: kafka-topics.sh's filters (topic-command) judge the whole cluster, leaderless
# partitions included, which no broker's gauges show.
SEMANTICS = tuple(name for name, p in PROFILES.items() if p.replicas_count is not None)


@dataclass(frozen=True)
class RecomputeSettings:
    semantics: str = DEFAULT_PROFILE.name
    mode: str = DEFAULT_MODE
    min_isr_default: int | None = None  # None: not configured
    min_isr_topics: Mapping[str, int] = field(default_factory=dict)

    @property
    def profile(self) -> Profile:
        return PROFILES[self.semantics]

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def configured_min_isr(self, topic: str) -> tuple[int, str]:
        """(min ISR, origin) from the configuration alone, as without the Admin API: the topic's
        value, else the default, else Kafka's own 1 (origins as exporter/source/admin/fallback names them)."""
        if topic in self.min_isr_topics:
            return self.min_isr_topics[topic], "configured"
        if self.min_isr_default is not None:
            return self.min_isr_default, "configured_default"
        return 1, "kafka_default"


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def recompute_settings(raw: Any, error: Callable[..., Exception], cluster: bool = False) -> RecomputeSettings:
    """`sidecar.recompute` validated; `error(path, problem, fix)` makes the ConfigError. `cluster`:
    for the cluster-wide mode (see the module docstring)."""
    where = ("sidecar", "recompute")
    if not isinstance(raw, Mapping):
        raise error(where, f"must be a mapping, got {type(raw).__name__}",
                    "write `recompute:` followed by indented semantics, mode, minInsyncReplicas")
    known = {"semantics", "mode", "minInsyncReplicas"}
    for key in raw:
        if key not in known:
            raise error(where + (key,), "unknown setting", f"use one of {', '.join(sorted(known))}")
    if cluster and "mode" in raw:
        raise error(where + ("mode",), "has no meaning in the cluster-wide mode (sidecar.mode: cluster computes "
                    "every value from the Admin API; nothing is read from a broker to keep or replace)",
                    "remove recompute.mode")
    semantics = raw.get("semantics", DEFAULT_PROFILE.name)
    if cluster and semantics not in PROFILES:
        raise error(where + ("semantics",), f"{semantics!r} is not a health profile", f"use one of {', '.join(PROFILES)}")
    if not cluster and semantics not in SEMANTICS:
        hint = " (topic-command describes kafka-topics.sh, not a broker's gauges)" if semantics == "topic-command" else ""
        raise error(where + ("semantics",), f"{semantics!r} is not a broker-gauge profile{hint}",
                    f"use one of {', '.join(SEMANTICS)}" + (" (or topic-command with sidecar.mode: cluster)"
                                                            if semantics == "topic-command" else ""))
    mode = raw.get("mode", DEFAULT_MODE)
    if mode not in MODES:
        raise error(where + ("mode",), f"{mode!r} is not a mode", f"use one of {', '.join(MODES)}")
    min_isr = raw.get("minInsyncReplicas") or {}
    if not isinstance(min_isr, Mapping):
        raise error(where + ("minInsyncReplicas",), f"must be a mapping, got {type(min_isr).__name__}",
                    "write default: N and topics: {NAME: N}")
    for key in min_isr:
        if key not in ("default", "topics"):
            raise error(where + ("minInsyncReplicas", key), "unknown setting", "use default or topics")
    default = min_isr.get("default")
    if default is not None and not _count(default):
        raise error(where + ("minInsyncReplicas", "default"), f"must be a whole number >= 1, got {default!r}",
                    "give the brokers' min.insync.replicas, e.g. 2")
    topics = min_isr.get("topics") or {}
    if not isinstance(topics, Mapping):
        raise error(where + ("minInsyncReplicas", "topics"), f"must be a mapping, got {type(topics).__name__}",
                    "write topics: {NAME: N}")
    for name, value in topics.items():
        if not _count(value):
            raise error(where + ("minInsyncReplicas", "topics", name), f"must be a whole number >= 1, got {value!r}",
                        "give the topic's min.insync.replicas")
    return RecomputeSettings(semantics, mode, default, {str(k): v for k, v in topics.items()})
