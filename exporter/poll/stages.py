"""The stages a poll runs between the source and the snapshot, made from the settings: each is None
when its `sidecar:` key does not ask for it, and switches its self metrics on when it runs."""
from __future__ import annotations

from typing import Callable

from kafka_jmx_sidecar.exporter.config.sidecar import SidecarSettings
from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics
from kafka_jmx_sidecar.exporter.rule_engine.config import Config


def admin(settings: SidecarSettings):
    """The Admin API, read once per poll for the stages that use it (exporter/source/admin/poll.py)."""
    wanted = (settings.recompute is not None and settings.recompute.enabled) or settings.reassignment is not None
    if settings.admin is None or not wanted:
        return None
    from kafka_jmx_sidecar.exporter.source.admin.poll import AdminPoll
    from kafka_jmx_sidecar.exporter.source.admin.source import AdminSource

    return AdminPoll(AdminSource(settings.admin))


def recompute(config: Config, settings: SidecarSettings, admin_poll, metrics: SelfMetrics):
    """The recompute stage (exporter/recompute/stage.py) when sidecar.recompute is on."""
    if settings.cluster:  # the cluster-wide source computes every value itself (exporter/source/cluster.py)
        metrics.enable_cluster()
        return None
    if settings.recompute is None or not settings.recompute.enabled:
        return None
    from kafka_jmx_sidecar.exporter.recompute.stage import Recompute

    metrics.enable_recompute()
    return Recompute(settings.recompute, config, admin_poll)


def reassignment(settings: SidecarSettings, admin_poll, metrics: SelfMetrics):
    """The reassignment series (exporter/reassignment/stage.py) when sidecar.reassignment is set."""
    if settings.reassignment is None:
        return None
    from kafka_jmx_sidecar.exporter.reassignment.stage import ReassignmentStage

    metrics.enable_reassignment()
    return ReassignmentStage(settings.reassignment, admin_poll, settings.naming)


def archive(settings: SidecarSettings, metrics: SelfMetrics, clock: Callable[[], float]):
    """The archive writer (exporter/archive/writer.py) when sidecar.archive is set."""
    if settings.archive is None:
        return None
    from kafka_jmx_sidecar.exporter.archive.writer import ArchiveWriter

    admin_source = None
    if settings.admin is not None:  # read by the writer when the recompute asked nothing
        from kafka_jmx_sidecar.exporter.source.admin.source import AdminSource

        admin_source = AdminSource(settings.admin)
    r = settings.recompute
    metrics.enable_archive()
    return ArchiveWriter(settings.archive, metrics, admin=admin_source,
                         min_isr_topics=dict(r.min_isr_topics) if r else None,
                         min_isr_default=r.min_isr_default if r else None, clock=clock)
