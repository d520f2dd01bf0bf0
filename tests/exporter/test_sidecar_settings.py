"""The `sidecar:` settings: JVM options (the JVM inside the sidecar starts with the defaults unless
`jvmOptions` replaces them)."""
from __future__ import annotations

import pytest

from exporter import jmx_source
from exporter.config_file import ConfigError
from exporter.rule_engine.config import parse_config
from exporter.sidecar_settings import DEFAULT_JVM_OPTIONS, SidecarSettings, sidecar_settings


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
