"""usable_cpus: the CPUs the sidecar may use, under a container's CPU limit (fake cgroup files)."""
import os

from kafka_jmx_sidecar.exporter.config import sidecar
from kafka_jmx_sidecar.exporter.config.cpus import usable_cpus

ON = len(os.sched_getaffinity(0))


def test_without_a_limit_every_cpu_the_process_may_run_on_counts(tmp_path):
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert usable_cpus(tmp_path) == ON
    assert usable_cpus(tmp_path / "absent") == ON


def test_a_cpu_limit_counts_rounded_up(tmp_path):
    (tmp_path / "cpu.max").write_text("50000 100000\n")  # half a CPU: one reader
    assert usable_cpus(tmp_path) == 1
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert usable_cpus(tmp_path) == min(ON, 2)
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert usable_cpus(v1) == 1
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")  # v1's "no limit"
    assert usable_cpus(v1) == ON


def test_the_default_connections_are_four_at_most_and_no_more_than_the_cpus(monkeypatch):
    monkeypatch.setattr(sidecar, "usable_cpus", lambda: 2)
    assert sidecar.SidecarSettings().connections == 2
    monkeypatch.setattr(sidecar, "usable_cpus", lambda: 16)
    assert sidecar.SidecarSettings().connections == 4
