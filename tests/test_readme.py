"""Every YAML example of the README and of docs/ loads as it is written: configuration examples through the
sidecar's own loader (with the files they name made in a scratch folder and their `${NAME}`s set),
alert rules through promtool. An example that stops loading fails here, not in a user's hands."""
from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.config.load import load

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^( *)```yaml\n(.*?)^\1```$", re.S | re.M)
ENV = {"OTLP_TOKEN": "Bearer otlp-secret", "JMX_PASSWORD": "jmx-secret", "TRUSTSTORE_PASSWORD": "trust-secret", "METRICS_PASSWORD": "metrics-secret",
       "KEYSTORE_PASSWORD": "key-secret"}


def examples() -> list[tuple[str, str]]:
    """(page:line, text) of every ```yaml block of the pages."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        found += [(f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}", textwrap.dedent(m.group(2)))
                  for m in _FENCE.finditer(text)]
    return found


def _run(*command: str, cwd: Path) -> None:
    subprocess.run(command, check=True, capture_output=True, cwd=cwd)


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """What the examples name under /etc: a CA, a server certificate and key (PEM and PKCS12, alias
    `server`), trust stores holding the CA, an empty web-config file."""
    d = tmp_path_factory.mktemp("etc")
    _run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
         "-days", "2", "-subj", "/CN=readme-ca", cwd=d)
    _run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
         "-subj", "/CN=server", cwd=d)
    _run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
         "-out", "server.crt", "-days", "2", cwd=d)
    _run("openssl", "pkcs12", "-export", "-in", "server.crt", "-inkey", "server.key", "-name", "server",
         "-out", "server.p12", "-passout", f"pass:{ENV['KEYSTORE_PASSWORD']}", cwd=d)
    for store in ("clients.p12", "truststore.p12"):
        _run("keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", "ca.crt", "-keystore", store,
             "-storetype", "PKCS12", "-storepass", ENV["TRUSTSTORE_PASSWORD"], cwd=d)
    (d / "web.yml").write_text("")
    return d


def _config_examples() -> list[tuple[str, str]]:
    return [(line, text) for line, text in examples() if not text.lstrip().startswith("- alert:")]


def test_the_readme_has_the_examples_this_test_knows():
    # configuration examples and alert rules: a new kind of example needs a check here
    kinds = {text.split(":", 1)[0].strip("- \n") for _, text in examples()}
    assert kinds == {"hostPort", "alert", "httpServer", "sidecar"}, kinds


@pytest.mark.parametrize("line, text", _config_examples(), ids=lambda v: v if ".md:" in v else "")
def test_a_configuration_example_loads_without_a_warning(line, text, files, tmp_path, monkeypatch):
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    written = re.sub(r"/etc/(?:jmx|sidecar)/", f"{files}/", text)
    cluster = re.search(r"^  mode: cluster", written, re.M) is not None  # reads no JMX: refuses a hostPort
    if not cluster and not re.search(r"^(hostPort|jmxUrl):", written, re.M):  # a fragment: what it shows counts
        written = "hostPort: 127.0.0.1:9999\n" + written
    path = tmp_path / "example.yml"
    path.write_text(written)
    loaded = load(str(path))
    assert loaded.config.warnings == (), line
    assert loaded.settings.cluster is cluster
    if "httpServer" in text:
        assert loaded.web.ssl_context is not None
        if "passwordHash" in text:  # the hash the README shows is the hash of what it says
            assert loaded.web.authorized("prometheus", "changeit")
            assert not loaded.web.authorized("prometheus", "wrong")
        else:
            assert loaded.web.authorized("prometheus", ENV["METRICS_PASSWORD"])
    if "trustStore" in text and "httpServer" not in text:
        assert loaded.config.trust_store.password == ENV["TRUSTSTORE_PASSWORD"]


def test_the_alert_examples_pass_promtool(tmp_path):
    rules = [text for _, text in examples() if text.lstrip().startswith("- alert:")]
    assert rules
    path = tmp_path / "rules.yml"
    path.write_text("groups:\n- name: readme\n  rules:\n" + "".join(textwrap.indent(r, "  ") for r in rules))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
