"""`sidecar.recompute`: which health profile the sidecar publishes whatever the broker's release,
and what it replaces (its keys: RECOMPUTE below; docs/recompute.md says what they do).

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

from kafka_jmx_sidecar.exporter.base.definitions import Block, Key, choice, custom, whole
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


def _topics(raw: Any, error: Callable[..., Exception], _block: Mapping) -> dict[str, int]:
    where = ("sidecar", "recompute", "minInsyncReplicas", "topics")
    if not isinstance(raw, Mapping):
        raise error(where, f"must be a mapping, got {type(raw).__name__}", "write topics: {NAME: N}")
    count = whole(1)
    for name, value in raw.items():
        if not count.check(value):
            raise error(where + (name,), count.wrong(value), "give the topic's min.insync.replicas")
    return {str(k): v for k, v in raw.items()}


MIN_ISR = Block(("sidecar", "recompute", "minInsyncReplicas"), "Topics' min.insync.replicas where the Admin API "
                "cannot tell them (or without sidecar.admin).", keys=(
    Key("default", whole(1), "Every topic's, unless listed under topics.", default_doc="1 (Kafka's default)",
        fix="give the brokers' min.insync.replicas, e.g. 2"),
    Key("topics", custom("a mapping of topic names to whole numbers >= 1", lambda v: True,
                         {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}}),
        "Per topic: {NAME: N}.", parse=_topics),
), shape_fix="write default: N and topics: {NAME: N}")
RECOMPUTE = Block(("sidecar", "recompute"), "Publish one health profile's values whatever the broker's release.", keys=(
    Key("semantics", choice(*PROFILES), "The health profile: a broker-gauge profile next to a broker; topic-command "
        "too in the cluster-wide mode.", default=DEFAULT_PROFILE.name),
    Key("mode", choice(*MODES, problem=lambda v: f"{v!r} is not a mode"), "Which families are recomputed: missing "
        "(only those the release lacks), outdated (also those computed with another formula), all, off. "
        "Not in the cluster-wide mode.", default=DEFAULT_MODE, fix=f"use one of {', '.join(MODES)}"),
    Key("minInsyncReplicas", None, "Min ISR used where the Admin API does not tell it (or without sidecar.admin).",
        block=MIN_ISR),
), example="""\
sidecar:
  recompute:
    semantics: kafka-3.7
    mode: outdated
    minInsyncReplicas:
      default: 2
      topics: {orders: 3}
""", shape_fix="write `recompute:` followed by indented semantics, mode, minInsyncReplicas")


def recompute_settings(raw: Any, error: Callable[..., Exception], cluster: bool = False) -> RecomputeSettings:
    """`sidecar.recompute` validated; `error(path, problem, fix)` makes the ConfigError. `cluster`:
    for the cluster-wide mode (see the module docstring)."""
    where = RECOMPUTE.path
    if isinstance(raw, Mapping):  # which profiles and keys the mode allows, before the keys' own checks
        if cluster and "mode" in raw:
            raise error(where + ("mode",), "has no meaning in the cluster-wide mode (sidecar.mode: cluster computes "
                        "every value from the Admin API; nothing is read from a broker to keep or replace)",
                        "remove recompute.mode")
        _check_semantics(raw.get("semantics", DEFAULT_PROFILE.name), cluster, error)
    values = RECOMPUTE.read(raw, error)
    min_isr = values.pop("min_insync_replicas") or {}
    return RecomputeSettings(**values, min_isr_default=min_isr.get("default"), min_isr_topics=min_isr.get("topics") or {})


def _check_semantics(semantics: Any, cluster: bool, error: Callable[..., Exception]) -> None:
    where = RECOMPUTE.path + ("semantics",)
    if cluster and semantics not in PROFILES:
        raise error(where, f"{semantics!r} is not a health profile", f"use one of {', '.join(PROFILES)}")
    if not cluster and semantics not in SEMANTICS:
        hint = " (topic-command describes kafka-topics.sh, not a broker's gauges)" if semantics == "topic-command" else ""
        raise error(where, f"{semantics!r} is not a broker-gauge profile{hint}",
                    f"use one of {', '.join(SEMANTICS)}" + (" (or topic-command with sidecar.mode: cluster)"
                                                            if semantics == "topic-command" else ""))
