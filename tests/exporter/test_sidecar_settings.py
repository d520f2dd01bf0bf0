"""The `sidecar:` settings: JVM options (the JVM inside the sidecar starts with the defaults, a heap
ceiling among them, unless `jvmOptions` replaces them; `jvmMaxHeap` sets the ceiling)."""
from __future__ import annotations

import io

import pytest

from kafka_jmx_sidecar.exporter.config import load as jmx_source
from kafka_jmx_sidecar.exporter.base.config_file import ConfigError
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from kafka_jmx_sidecar.exporter.config.sidecar import (DEFAULT_JVM_MAX_HEAP, DEFAULT_JVM_OPTIONS, ONE_SHOT_JVM_OPTIONS,
                                                       SidecarSettings, jvm_start_options, sidecar_settings)


def settings(text: str) -> SidecarSettings:
    return sidecar_settings(parse_config(text, source="sidecar.yml"))


def test_jvm_options_are_a_list_of_options():
    assert settings("sidecar:\n  jvmOptions: [\"-Xmx512m\", \"-XX:+UseSerialGC\"]\n").jvm_options == \
        ("-Xmx512m", "-XX:+UseSerialGC")
    assert settings("sidecar:\n  jvmOptions: []\n").jvm_options == ()
    assert settings("sidecar: {}\n").jvm_options is None
    for bad in ('"-Xmx512m"', "[512m]", "[1]"):
        with pytest.raises(ConfigError) as e:
            settings(f"sidecar:\n  jvmOptions: {bad}\n")
        assert "sidecar.jvmOptions" in str(e.value) and ":2" in str(e.value)


def test_the_defaults_apply_only_when_this_process_starts_the_jvm(monkeypatch):
    import jpype

    monkeypatch.setattr(jpype, "isJVMStarted", lambda: False)
    assert jmx_source.jvm_options(SidecarSettings()) == DEFAULT_JVM_OPTIONS
    assert jmx_source.jvm_options(SidecarSettings(jvm_options=("-Xmx1g",))) == ("-Xmx1g",)
    assert jmx_source.jvm_options(SidecarSettings(jvm_options=())) == ()
    monkeypatch.setattr(jpype, "isJVMStarted", lambda: True)  # a JVM already running keeps its options
    assert jmx_source.jvm_options(SidecarSettings()) == ()
    assert jmx_source.jvm_options(SidecarSettings(jvm_options=("-Xmx1g",))) == ("-Xmx1g",)


def test_the_default_jvm_has_a_heap_ceiling_and_jvm_max_heap_moves_it():
    assert DEFAULT_JVM_MAX_HEAP == "256m" and "-Xmx256m" in jvm_start_options(SidecarSettings())
    assert settings("sidecar:\n  jvmMaxHeap: 1g\n").jvm_max_heap == "1g"
    assert jvm_start_options(settings("sidecar:\n  jvmMaxHeap: 1g\n"))[-1] == "-Xmx1g"  # the JVM takes the last -Xmx
    assert settings("sidecar:\n  jvmMaxHeap: 67108864\n").jvm_max_heap == "67108864"  # bytes, as -Xmx takes them
    # jvmOptions replace the defaults, their ceiling too; an explicit jvmMaxHeap still applies
    assert jvm_start_options(SidecarSettings(jvm_options=("-XX:+UseSerialGC",))) == ("-XX:+UseSerialGC",)
    assert jvm_start_options(SidecarSettings(jvm_options=("-Xmx2g",), jvm_max_heap="512m")) == ("-Xmx2g", "-Xmx512m")
    for bad in ("16m", "lots", "1.5g", "[256m]", "true"):
        with pytest.raises(ConfigError) as e:
            settings(f"sidecar:\n  jvmMaxHeap: {bad}\n")
        assert "sidecar.jvmMaxHeap" in str(e.value) and "at least 32m" in str(e.value)


def test_a_one_shot_starts_its_heap_larger_with_the_same_ceiling():
    one_shot = jvm_start_options(SidecarSettings(one_shot=True))
    size = lambda options, flag: next(int(o[len(flag):-1]) for o in options if o.startswith(flag))  # noqa: E731
    assert size(one_shot, "-Xms") >= 4 * size(DEFAULT_JVM_OPTIONS, "-Xms")
    assert size(one_shot, "-Xmn") >= 4 * size(DEFAULT_JVM_OPTIONS, "-Xmn")
    assert "-Xmx256m" in one_shot and "-XX:+UseSerialGC" in one_shot
    assert jvm_start_options(SidecarSettings(one_shot=True, jvm_max_heap="1g"))[-1] == "-Xmx1g"
    assert jvm_start_options(SidecarSettings(one_shot=True, jvm_options=("-Xmx2g",))) == ("-Xmx2g",)  # replaced


def test_scrape_polls_with_the_one_shot_jvm(tmp_path, monkeypatch):
    from kafka_jmx_sidecar.exporter.commands import serve

    asked = []

    class Unreachable:
        last_error = "the broker did not answer"

        def poll_once(self) -> bool:
            return False

        def close(self) -> None:
            pass

    monkeypatch.setattr(serve, "make_collector", lambda loaded, *_, **__: asked.append(loaded.settings) or Unreachable())
    config = tmp_path / "sidecar.yml"
    config.write_text("hostPort: localhost:1\nrules:\n- pattern: .*\n")
    err = io.StringIO()
    assert serve.scrape(str(config), out=io.BytesIO(), err=err) == 1 and "did not answer" in err.getvalue()
    assert asked[0].one_shot and jvm_start_options(asked[0]) == ONE_SHOT_JVM_OPTIONS
    assert not sidecar_settings(parse_config(config.read_text(), source="sidecar.yml")).one_shot  # serve's


def test_a_running_jvm_is_asked_for_an_explicit_heap_ceiling(monkeypatch):
    """In a process whose JVM already runs, the default ceiling asks for nothing, an explicit
    one is passed on (and start_jvm refuses it when the JVM lacks it)."""
    import jpype

    monkeypatch.setattr(jpype, "isJVMStarted", lambda: True)
    assert jmx_source.jvm_options(SidecarSettings(jvm_max_heap="512m")) == DEFAULT_JVM_OPTIONS + ("-Xmx512m",)
