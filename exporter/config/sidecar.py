"""The sidecar's own settings: one top-level `sidecar:` key in the jmx_exporter YAML file, so a
jmx_exporter file loads unchanged and our keys never collide with its keys. Its keys are defined
in SIDECAR below (type, default, what each does, whether a reload applies it); each feature's
block is defined beside the feature (recompute, admin, archive, reassignment). docs/configuration.md
is generated from these definitions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from kafka_jmx_sidecar.exporter.archive.settings import ARCHIVE, ArchiveSettings, archive_settings
from kafka_jmx_sidecar.exporter.base.definitions import (FIXED, RESTART, Block, Key, choice, custom, number, text,
                                                         text_list, whole)
from kafka_jmx_sidecar.exporter.config.cpus import usable_cpus
from kafka_jmx_sidecar.exporter.reassignment.settings import REASSIGNMENT, ReassignmentSettings, reassignment_settings
from kafka_jmx_sidecar.exporter.recompute.settings import RECOMPUTE, RecomputeSettings, recompute_settings
from kafka_jmx_sidecar.exporter.source.admin.settings import ADMIN, AdminSettings, admin_settings
from kafka_jmx_sidecar.exporter.source.jmx.client_settings import JmxSettings
from kafka_jmx_sidecar.exporter.rule_engine.config import Config, require_target

# The JVM inside the sidecar only runs the JMX client, so it is started for a small footprint: the
# serial collector (no concurrent GC threads, no G1 remembered sets; its pauses stop Java only,
# never a scrape) and a heap that starts small and gives memory back after a collection (G1 grew
# the heap to 2.9 GB during a first poll at 40,000 partitions). C1-only compilation
# (-XX:TieredStopAtLevel=1) saves a little more but made the client's reads ~40% slower.
#
# The heap's ceiling: what the client holds grows with the broker, most while it lists the names
# (the broker's answer to one queryMBeans is deserialized whole). At 40,000 partitions (430,000
# MBeans) the live heap peaks at ~45 MB, so 256m leaves room for a broker several times as big,
# where the JVM's own default (a quarter of the machine's memory) let the heap of a sidecar take
# gigabytes. `jvmMaxHeap` moves it; an OutOfMemoryError becomes a poll error naming that setting.
#
# Each poll ends its read with a full collection (exporter/source/jmx/jvm.py, shrink_heap), after which
# the heap keeps at most 30% of itself free. -XX:-ShrinkHeapInSteps: the serial collector would
# otherwise give back 0%, then 10%, 40% of the excess on successive collections, and a sidecar
# whose heap a names listing grew kept it (64 MiB freed: 0 bytes given back at the first full
# collection; all of it with this option).
#
# -Xmn8m: a young generation of 8 MB whatever the heap's size. Its default is a third of the heap,
# and a names listing (a family's ObjectNames alive at once) grew the heap to ~70 MB, a young
# generation of ~23 MB of it mostly garbage: with 8 MB the listing's heap peaked at ~56 MB and the
# sidecar's RSS 10-14 MB lower (40,000 partitions, Strimzi's rules). What lives is copied once
# either way; only the collections are smaller and more frequent.
DEFAULT_JVM_MAX_HEAP = "256m"
DEFAULT_JVM_OPTIONS = ("-XX:+UseSerialGC", "-Xms16m", f"-Xmx{DEFAULT_JVM_MAX_HEAP}", "-Xmn8m",
                       "-XX:MinHeapFreeRatio=10", "-XX:MaxHeapFreeRatio=30", "-XX:-ShrinkHeapInSteps")

# A one-shot (`scrape`) lists the names once, polls once and exits: its heap starts at 128m with a
# young generation of 64 MB, time before footprint. With the defaults above a listing's answers
# outlive their young collections (a family's ~40,000 ObjectNames are alive at once) and the heap
# grows 10% at a time, so ~40 full collections ran: at 40,000 partitions with Strimzi's rules the
# first poll's Java threads stood still 3.0-3.8 s, against 1.2-1.5 s with these, and the one-shot
# took ~1.5 s less. Its peak RSS is ~100 MiB higher (~340 against ~240 MiB) while it runs.
ONE_SHOT_JVM_OPTIONS = tuple({"-Xms16m": "-Xms128m", "-Xmn8m": "-Xmn64m"}.get(o, o) for o in DEFAULT_JVM_OPTIONS)
_MIN_HEAP = 32 << 20  # less would not hold the helper's compilation, nor a broker of some size

# Parallel JMX connections a poll reads over (sidecar.connections): a broker serves each call on a
# thread of its own, so reads over 4 connections overlap their round trips' waits and use up to 4
# of the broker's cores while they run. More gain little on loopback and cost the broker more
# threads and sockets. Each connection's reader also keeps a CPU of the sidecar's busy decoding
# answers, so the default is no more than the CPUs the sidecar may use. On 2 CPUs shared with the
# broker, 4 connections polled 40,000 partitions no faster than 2, and scrapes waited longer.
DEFAULT_CONNECTIONS = 4


def default_connections() -> int:
    return min(DEFAULT_CONNECTIONS, usable_cpus())


@dataclass(frozen=True)
class SidecarSettings:
    listen_address: str = "0.0.0.0:9404"
    poll_interval_seconds: float = 15.0
    stale_after_seconds: float | None = None
    withdraw_after_seconds: float | None = None
    names_refresh_seconds: float = 300.0
    connections: int = field(default_factory=default_connections)
    connect_timeout_seconds: float = 10.0
    read_timeout_seconds: float = 30.0
    naming: str = "0.x"
    web_config_file: str | None = None
    jvm_max_heap: str | None = None  # None: DEFAULT_JVM_MAX_HEAP, unless jvm_options replace the defaults
    jvm_options: tuple[str, ...] | None = None  # None: the defaults
    recompute: RecomputeSettings | None = None  # None: nothing recomputed
    admin: AdminSettings | None = None  # None: no Admin API
    archive: ArchiveSettings | None = None  # None: nothing archived
    reassignment: ReassignmentSettings | None = None  # None: no reassignment series
    mode: str = "broker"  # BROKER or CLUSTER (see mode_of)
    one_shot: bool = False  # not a key: `scrape` sets it (one poll, then exit), for its JVM's defaults

    @property
    def cluster(self) -> bool:
        return self.mode == CLUSTER

    @property
    def stale_after(self) -> float:
        return self.stale_after_seconds or 3 * self.poll_interval_seconds

    @property
    def withdraw_after(self) -> float:
        """How long the broker's series outlive the last good poll once polls fail."""
        return 4 * self.poll_interval_seconds if self.withdraw_after_seconds is None else self.withdraw_after_seconds

    def listen(self) -> tuple[str, int]:
        host, _, port = self.listen_address.rpartition(":")
        return host.strip("[]") or "0.0.0.0", int(port)


def jvm_start_options(settings: SidecarSettings) -> tuple[str, ...]:
    """The options of the sidecar's JVM: `jvmOptions`, else the defaults (a one-shot's, or serve's;
    with the default heap ceiling); then `-Xmx` from `jvmMaxHeap` when given (the JVM takes the
    last -Xmx)."""
    defaults = ONE_SHOT_JVM_OPTIONS if settings.one_shot else DEFAULT_JVM_OPTIONS
    base = defaults if settings.jvm_options is None else tuple(settings.jvm_options)
    return base + ((f"-Xmx{settings.jvm_max_heap}",) if settings.jvm_max_heap is not None else ())


BROKER, CLUSTER = "broker", "cluster"
MODES = (BROKER, CLUSTER)


def mode_of(config: Config) -> str:
    """`sidecar.mode` as written (BROKER when absent): `broker`, a sidecar next to one broker
    reading its JMX; `cluster`, one instance judging every partition of the cluster from the
    Admin API alone (exporter/source/cluster.py). Anything else is refused by sidecar_settings."""
    raw = _raw(config)
    mode = raw.get("mode") if isinstance(raw, Mapping) else None
    return BROKER if mode is None else mode


def _raw(config: Config) -> Any:
    """The `sidecar:` key as the file holds it (the rules' parser leaves it to this module)."""
    value = config.file.data.get("sidecar") if isinstance(config.file.data, Mapping) else None
    return {} if value is None else value


def require_source(config: Config) -> Config:
    """What the sidecar reads must be configured: a broker's JMX (rule_engine.config's
    require_target), except in the cluster-wide mode, the one exception, which reads the Admin
    API (sidecar.admin, checked by sidecar_settings) and refuses a JMX target it would never read."""
    if mode_of(config) != CLUSTER:
        return require_target(config)
    if config.jmx_url:
        data = config.file.data if isinstance(config.file.data, Mapping) else {}
        key = "jmxUrl" if "jmxUrl" in data else "hostPort"
        raise config.file.error((key,), "the cluster-wide mode (sidecar.mode: cluster) reads no JMX: it asks the "
                                "Admin API (sidecar.admin) for every partition",
                                f"remove {key}, or remove sidecar.mode to run next to that broker")
    return config


def require_same_mode(config: Config, running: str) -> Config:
    """A reloaded file in the mode the sidecar runs in: the mode decides what is read, fixed at start."""
    new = mode_of(config)
    if new != running:
        raise config.file.error(("sidecar", "mode"), f"changed from {running} to {new}",
                                "restart the sidecar to change its mode (the last good configuration stays)")
    return config


_HEAP_SIZE = re.compile(r"(\d+)([kKmMgG]?)")


def heap_bytes(v: Any) -> int | None:
    """A JVM memory size (`256m`, `1g`, `524288k`, or bytes as a number) in bytes; None if it is
    not one."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    m = _HEAP_SIZE.fullmatch(v) if isinstance(v, str) else None
    if m is None:
        return None
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def _listen(v: Any) -> bool:
    if not isinstance(v, str) or ":" not in v:
        return False
    port = v.rpartition(":")[2]
    return port.isdigit() and 0 <= int(port) <= 65535


_SECONDS = number("seconds", as_float=False)
_JVM_OPTIONS = 'a list of JVM options such as ["-Xmx512m"]'
SIDECAR = Block(("sidecar",), "The sidecar's own settings, beside the jmx_exporter keys.", keys=(
    Key("listenAddress", custom("a host:port such as 0.0.0.0:9404", _listen, {"type": "string", "pattern": r":\d+$"}),
        "Where /metrics, /-/healthy and /-/ready listen.", default="0.0.0.0:9404", reload=RESTART),
    Key("pollIntervalSeconds", _SECONDS, "How often the broker is polled; /metrics serves the last good poll.",
        default=15),
    Key("staleAfterSeconds", _SECONDS, "Age after which the served snapshot counts as stale "
        "(kafka_jmx_sidecar_snapshot_stale).", default_doc="3 poll intervals"),
    Key("withdrawAfterSeconds", number("seconds", inclusive=True, as_float=False),
        "How long the broker's series outlive the last good poll once polls fail (0: at the first failed poll).",
        default_doc="4 poll intervals"),
    Key("namesRefreshSeconds", _SECONDS, "How often the list of MBean names is read again (new topics and "
        "partitions join then).", default=300),
    Key("connections", whole(1, 64), f"Parallel JMX connections a poll reads over, on a broker of "
        f"{JmxSettings.parallel_from:,} MBeans or more (a smaller one is read on one); its queries overlap the reads, "
        "and each other (one per connection at a time) when the poll reads few MBeans besides.",
        default_doc=f"{DEFAULT_CONNECTIONS}, or the CPUs the sidecar may use (its CPU limit) when fewer"),
    Key("connectTimeoutSeconds", _SECONDS, "Timeout of a JMX connection attempt.", default=10),
    Key("readTimeoutSeconds", _SECONDS, "Timeout of one JMX read.", default=30),
    Key("naming", choice("0.x", "1.x", words='"0.x" (jmx_exporter 0.x names) or "1.x" (OpenMetrics names)'),
        "Which jmx_exporter release's names and formats the output follows.", default="0.x", reload=RESTART),
    Key("webConfigFile", text("a file path"), "A Prometheus web-config file: TLS and basic auth of /metrics "
        "(the same as --web.config.file).", reload=RESTART),
    Key("jvmMaxHeap", custom("a JVM heap size of at least 32m, such as 256m or 1g",
                             lambda v: (heap_bytes(v) or 0) >= _MIN_HEAP,
                             {"type": ["string", "integer"], "pattern": "^[0-9]+[kKmMgG]?$"}, str),
        "The heap ceiling (-Xmx) of the JVM inside the sidecar (the JMX client).",
        default_doc=f"{DEFAULT_JVM_MAX_HEAP}, unless jvmOptions replace the defaults", reload=RESTART),
    Key("jvmOptions", text_list(_JVM_OPTIONS, item=lambda o: isinstance(o, str) and o.startswith("-"),
                                item_schema={"type": "string", "pattern": "^-"}),
        "Options of the JVM inside the sidecar; they replace the defaults.",
        default_doc=" ".join(DEFAULT_JVM_OPTIONS) + " (`scrape`: "
        + " ".join(o for o in ONE_SHOT_JVM_OPTIONS if o not in DEFAULT_JVM_OPTIONS) + " instead, for its one listing)",
        reload=RESTART),
    Key("recompute", None, "Health values of one profile whatever the broker's release (without the key: nothing "
        "recomputed).", block=RECOMPUTE, reload=RESTART,
        parse=lambda v, error, raw: recompute_settings(v, error, cluster=raw.get("mode") == CLUSTER)),
    Key("admin", None, "The Kafka Admin API: min ISR and reassignments for the recompute and the reassignment "
        "series; the whole cluster in the cluster-wide mode.", block=ADMIN, reload=RESTART,
        parse=lambda v, error, raw: admin_settings(v, error)),
    Key("archive", None, "What each poll knew, on disk, for the backfill (without the key: nothing archived).",
        block=ARCHIVE, reload=RESTART, parse=lambda v, error, raw: archive_settings(v, error)),
    Key("reassignment", None, "Reassignment traffic and progress series (`reassignment: {}` for the defaults).",
        block=REASSIGNMENT, reload=RESTART, parse=lambda v, error, raw: reassignment_settings(v, error)),
    Key("mode", choice(*MODES, words='"broker" (next to one broker, over JMX) or "cluster" (every partition of the '
                                     'cluster, from the Admin API alone)'),
        "broker: next to one broker, over JMX; cluster: the whole cluster from the Admin API alone, with "
        "sidecar.admin and no hostPort/jmxUrl.", default=BROKER, reload=FIXED),
), example="""\
sidecar:
  listenAddress: 0.0.0.0:9404
  pollIntervalSeconds: 15
  namesRefreshSeconds: 300
  connections: 2
  naming: "1.x"
  jvmMaxHeap: 512m
""", shape_fix="put the sidecar's settings as `key: value` lines under sidecar:")


def sidecar_settings(config: Config, overrides: Mapping[str, Any] | None = None) -> SidecarSettings:
    """The `sidecar:` key of `config`'s file, validated; command-line `overrides` (field name -> value) win."""
    error = config.file.error
    values = {k: v for k, v in SIDECAR.read(_raw(config), error).items() if v is not None}  # None: not set
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    settings = SidecarSettings(**values)
    if settings.reassignment is not None and settings.admin is not None and not settings.admin.log_dirs:
        raise error(("sidecar", "admin", "logDirs"), "false, but sidecar.reassignment measures progress with "
                    "DescribeLogDirs", "remove logDirs: false (it asks only what the reassignment series measure)")
    if settings.cluster:  # the archive and the reassignment series read one broker's polls: not built for the view yet
        for key in ("archive", "reassignment"):
            if getattr(settings, key) is not None:
                raise error(("sidecar", key), "is not supported in the cluster-wide mode (sidecar.mode: cluster) yet",
                            f"remove sidecar.{key}, or run it in a sidecar next to each broker")
    if settings.cluster and settings.admin is None:
        raise error(("sidecar", "mode"), "the cluster-wide mode reads every partition from the Kafka Admin API, "
                    "and sidecar.admin is not set", "add sidecar.admin with bootstrapServers (the brokers' listeners)")
    if settings.naming == "1.x":
        for rule in config.rules:  # what jmx_exporter 1.x refuses at start-up, 0.x does not
            if rule.bad_value_factor is not None:
                raise error(("rules", rule.index, "valueFactor"),
                            f"{rule.bad_value_factor!r} is not a number (jmx_exporter 1.x refuses the file; "
                            f"0.x takes 1.0)", "write a number such as 0.001")
    return settings
