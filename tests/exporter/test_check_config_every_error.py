"""`check-config` (and `serve`, which loads the same way) names every error of a file in one run:
the jmx_exporter keys, each rule, each `sidecar:` setting and the web-config file it names, in
the file's order, one `file:line: key: problem; fix` a line."""
from __future__ import annotations

import io

from kafka_jmx_sidecar.exporter.commands.serve import check_config

BROKEN = """\
hostPort: 127.0.0.1:9999
lowercaseOutputName: yes please
rules:
  - pattern: 'kafka.server<type=(.+'
    name: x
  - pattern: 'kafka.server<type=(.+)><>Value'
    type: gauges
  - pattern: 'kafka.server<type=(.+)><>Count'
    name: kafka_$1_total
sidecar:
  pollIntervalSeconds: -1
  bogus: 1
"""


def check(tmp_path, text: str, web: str | None = None) -> tuple[int, list[str]]:
    path = tmp_path / "F"
    path.write_text(text)
    if web is not None:
        (tmp_path / "W").write_text(web)
    out, err = io.StringIO(), io.StringIO()
    code = check_config(str(path), out, err, web_config_file=str(tmp_path / "W") if web is not None else None)
    return code, [line.replace(str(tmp_path) + "/", "") for line in err.getvalue().splitlines()]


def test_every_error_of_the_rules_and_the_sidecar_key_in_the_files_order(tmp_path):
    code, lines = check(tmp_path, BROKEN)
    assert code == 2
    assert [line.split(": ")[0:2] for line in lines] == [
        ["F:2", "lowercaseOutputName"], ["F:4", "rules[0].pattern"], ["F:7", "rules[1].type"],
        ["F:11", "sidecar.pollIntervalSeconds"], ["F:12", "sidecar.bogus"]]
    assert "invalid regex" in lines[1] and "'gauges' is not a metric type" in lines[2]
    assert "got -1" in lines[3] and "unknown setting" in lines[4]


def test_the_web_config_files_error_comes_with_the_others(tmp_path):
    code, lines = check(tmp_path, "hostPort: 127.0.0.1:9999\nsidecar:\n  connections: 0\n",
                        web="tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  rate_limit: 1\n")
    assert code == 2
    assert lines[0].startswith("F:3: sidecar.connections: must be a whole number from 1 to 64, got 0")
    assert len(lines) == 2 and lines[1].startswith("W:"), lines


def test_one_error_is_one_line(tmp_path):
    code, lines = check(tmp_path, "hostPort: 127.0.0.1:9999\nsidecar:\n  connections: 0\n")
    assert code == 2 and len(lines) == 1


def test_an_unparsable_file_is_one_error_and_nothing_more(tmp_path):
    code, lines = check(tmp_path, "rules:\n- pattern: [unclosed\n")
    assert code == 2 and len(lines) == 1 and lines[0].startswith("F:")
