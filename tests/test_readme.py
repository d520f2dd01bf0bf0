"""Every YAML example of the README and of docs/ loads as it is written: configuration examples through the
sidecar's own loader and `check-config`'s checks (with the files they name made in a scratch folder and
their `${NAME}`s set), alert rules through `promtool check rules`, Prometheus scrape configurations
through `promtool check config`. An example that stops loading fails here, not in a user's hands."""
from __future__ import annotations

import io
import re
import subprocess
import textwrap
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.commands.serve import check_loaded
from kafka_jmx_sidecar.exporter.config.load import load
from tests.e2e.prometheus_server import VERSIONS, promtool

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


def _kind(text: str) -> str:
    return text.split(":", 1)[0].strip("- \n")


def _config_examples() -> list[tuple[str, str]]:
    return [(line, text) for line, text in examples() if _kind(text) not in ("alert", "scrape_configs")]


def test_the_readme_has_the_examples_this_test_knows():
    # configuration examples, alert rules, scrape configurations: a new kind of example needs a check here
    kinds = {_kind(text) for _, text in examples()}
    assert kinds == {"hostPort", "alert", "httpServer", "sidecar", "scrape_configs", "openTelemetry"}, kinds


@pytest.mark.parametrize("line, text", _config_examples(), ids=lambda v: v if ".md:" in v else "")
def test_a_configuration_example_loads_without_a_warning(line, text, files, tmp_path, monkeypatch):
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    written = re.sub(r"/etc/(?:jmx|sidecar)/", f"{files}/", text).replace("/var/lib/", f"{tmp_path}/var/lib/")
    cluster = re.search(r"^  mode: cluster", written, re.M) is not None  # reads no JMX: refuses a hostPort
    if not cluster and not re.search(r"^(hostPort|jmxUrl):", written, re.M):  # a fragment: what it shows counts
        written = "hostPort: 127.0.0.1:9999\n" + written
    path = tmp_path / "example.yml"
    path.write_text(written)
    loaded = load(str(path))
    assert loaded.config.warnings == (), line
    out, err = io.StringIO(), io.StringIO()  # and what `check-config` adds to the loader's checks
    assert check_loaded(loaded, str(path), out, err) == 0, f"{line}: {err.getvalue()}"
    assert ": OK: " in out.getvalue()
    assert loaded.settings.cluster is cluster
    if "httpServer" in text:
        assert loaded.web.ssl_context is not None
        if "passwordHash" in text:  # the hash the README shows is the hash of what it says
            assert loaded.web.authorized("prometheus", "changeit")
            assert not loaded.web.authorized("prometheus", "wrong")
        else:
            assert loaded.web.authorized("prometheus", ENV["METRICS_PASSWORD"])
    if "openTelemetry" in text:  # the push is on, its token from the environment
        assert loaded.otlp is not None and ": OK: openTelemetry, pushing to " in out.getvalue()
        if "OTLP_TOKEN" in text:
            assert loaded.otlp.headers["Authorization"] == ENV["OTLP_TOKEN"]
    if "trustStore" in text and "httpServer" not in text:
        assert loaded.config.trust_store.password == ENV["TRUSTSTORE_PASSWORD"]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_alert_examples_pass_promtool(tmp_path, version):
    """Prometheus 2's promtool and 3's."""
    rules = [text for _, text in examples() if text.lstrip().startswith("- alert:")]
    assert rules
    path = tmp_path / "rules.yml"
    path.write_text("groups:\n- name: readme\n  rules:\n" + "".join(textwrap.indent(r, "  ") for r in rules))
    result = subprocess.run([promtool(version), "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("version", VERSIONS)
def test_the_scrape_configuration_examples_pass_promtool(tmp_path, version):
    """Prometheus 2's promtool and 3's: an operator may run either."""
    configs = [(line, text) for line, text in examples() if _kind(text) == "scrape_configs"]
    assert configs
    for line, text in configs:
        path = tmp_path / "prometheus.yml"
        path.write_text(text)
        result = subprocess.run([promtool(version), "check", "config", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, f"{line}: {result.stdout}{result.stderr}"


README_MAX_LINES = 250
_CODE = re.compile(r"^( *)```.*?^\1```$|`[^`\n]*`", re.S | re.M)
_LINK = re.compile(r"\[[^\]\n]*\]\(<?([^)<>\s]+)>?(?:\s+\"[^\"]*\")?\)|^\[[^\]\n]+\]:\s*(\S+)", re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation but `-` and `_` dropped, spaces -> `-`."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().replace("`", "").lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: dict[str, int] = {}
    names = set()
    for m in re.finditer(r"^#{1,6} +(.+?) *#*$", _CODE.sub("", page.read_text(encoding="utf-8")), re.M):
        slug = _slug(m.group(1))
        names.add(slug if slug not in found else f"{slug}-{found[slug]}")
        found[slug] = found.get(slug, 0) + 1
    return names


def links() -> list[tuple[str, Path, str]]:
    """(page:line, page, target) of every link of the pages that is not to another site."""
    found = []
    for page in PAGES:
        text = _CODE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), page.read_text(encoding="utf-8"))
        for m in _LINK.finditer(text):
            target = m.group(1) or m.group(2)
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):
                found.append((f"{page.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}", page, target))
    return found


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for where, page, target in links():
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        name = str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(resolved)
        if not resolved.exists():
            broken.append(f"{where}: {target}: no such file")
        elif anchor and (resolved.suffix != ".md" or anchor not in anchors(resolved)):
            broken.append(f"{where}: {target}: no heading #{anchor} in {name}")
    assert not broken, "\n".join(broken)


def test_the_link_check_sees_links_and_anchors():
    # a check that found no link, or no heading, would pass whatever the pages say
    assert len(links()) > 50
    assert "when-the-broker-cannot-be-read" in anchors(ROOT / "docs" / "running.md")
    assert "on-a-vm-with-systemd" in anchors(ROOT / "README.md")
    assert _slug("A broker's JMX over `TLS`") == "a-brokers-jmx-over-tls"


def test_the_readme_stays_short():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to a page under docs/"
