"""`sidecar.reassignment`: its one key, and the errors naming file:line, key and fix."""
from __future__ import annotations

import pytest

from kafka_jmx_sidecar.exporter.base.config_file import ConfigError
from kafka_jmx_sidecar.exporter.reassignment.settings import ReassignmentSettings
from kafka_jmx_sidecar.exporter.rule_engine.config import parse_config
from kafka_jmx_sidecar.exporter.config.sidecar import sidecar_settings


def settings(text: str):
    return sidecar_settings(parse_config(text, source="sidecar.yml"))


def test_defaults_and_the_window():
    assert settings("sidecar: {}\n").reassignment is None
    assert settings("sidecar:\n  reassignment: {}\n").reassignment == ReassignmentSettings(60.0)
    assert settings("sidecar:\n  reassignment:\n    rateWindowSeconds: 15\n").reassignment == ReassignmentSettings(15.0)


@pytest.mark.parametrize("block, key, fix", [
    ("  reassignment: 5\n", "sidecar.reassignment", "reassignment: {}"),
    ("  reassignment:\n    rateWindow: 5\n", "sidecar.reassignment.rateWindow", "use rateWindowSeconds"),
    ("  reassignment:\n    rateWindowSeconds: 0\n", "sidecar.reassignment.rateWindowSeconds", "e.g. 60"),
    ("  reassignment:\n    rateWindowSeconds: true\n", "sidecar.reassignment.rateWindowSeconds", "e.g. 60"),
    ("  reassignment: {}\n  admin:\n    bootstrapServers: [\"k:9092\"]\n    logDirs: false\n",
     "sidecar.admin.logDirs", "remove logDirs: false"),
])
def test_errors_name_the_file_line_key_and_fix(block, key, fix):
    with pytest.raises(ConfigError) as e:
        settings("sidecar:\n" + block)
    text = str(e.value)
    assert "sidecar.yml:" in text and key in text and fix in text
