"""The web-config file re-read when it or a file it names changes; a bad one keeps the last good."""
from __future__ import annotations

import logging
import shutil
import ssl

import bcrypt

from kafka_jmx_sidecar.exporter.output.self_metrics import SelfMetrics
from kafka_jmx_sidecar.exporter.http.web_config import load_web_config
from kafka_jmx_sidecar.exporter.http.web_config_reload import WebConfigReloader
from tests.exporter.test_http import pki  # noqa: F401 (a fixture)


def users(*pairs: tuple[str, str]) -> str:
    return "basic_auth_users:\n" + "".join(
        f"  {u}: '{bcrypt.hashpw(p.encode(), bcrypt.gensalt(rounds=4)).decode()}'\n" for u, p in pairs)


def reloader(path) -> tuple[WebConfigReloader, SelfMetrics]:
    metrics = SelfMetrics()
    return WebConfigReloader(str(path), load_web_config(str(path)), metrics), metrics


def counts(metrics: SelfMetrics) -> tuple[float, float]:
    return metrics.web_config_reload_success._value.get(), metrics.web_config_reload_failure._value.get()


def test_a_changed_password_applies_and_a_bad_file_keeps_the_last_good_one(tmp_path, caplog):
    p = tmp_path / "web.yml"
    p.write_text(users(("prometheus", "old")))
    watch, metrics = reloader(p)
    assert watch.check() is False and counts(metrics) == (0, 0)  # nothing changed
    assert watch.current.authorized("prometheus", "old")

    p.write_text(users(("prometheus", "new")))
    assert watch.check() is True and counts(metrics) == (1, 0)
    assert not watch.current.authorized("prometheus", "old") and watch.current.authorized("prometheus", "new")

    good = watch.current
    p.write_text("basic_auth_users:\n  prometheus: not-a-hash\n")
    with caplog.at_level(logging.INFO, logger="kafka_jmx_sidecar.web_config"):
        assert watch.check() is False
        assert watch.check() is False  # reported once, not at every check
    assert watch.current is good and counts(metrics) == (1, 1)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [f"web config reload failed, keeping the last good one: {p}:2: basic_auth_users.prometheus: "
                      "is not a bcrypt hash; generate one with `htpasswd -nBC 12 '' | tr -d ':\\n'` or python -c "
                      "\"import bcrypt; print(bcrypt.hashpw(b'secret', bcrypt.gensalt()).decode())\""]

    p.write_text(users(("prometheus", "newer")))
    assert watch.check() is True and counts(metrics) == (2, 1)
    assert watch.current.authorized("prometheus", "newer")


def test_a_rotated_certificate_file_is_reloaded_and_tls_cannot_be_dropped_by_an_edit(tmp_path, pki):  # noqa: F811
    for name in ("server.crt", "server.key", "client.crt", "client.key", "ca.crt"):
        shutil.copy(pki / name, tmp_path / name)
    p = tmp_path / "web.yml"
    p.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n")
    watch, metrics = reloader(p)
    first = watch.current.ssl_context
    assert set(watch.current.files) == {str(p), str(tmp_path / "server.crt"), str(tmp_path / "server.key")}

    # the certificate and key files change, the web config does not
    shutil.copy(pki / "client.crt", tmp_path / "server.crt")
    shutil.copy(pki / "client.key", tmp_path / "server.key")
    assert watch.check() is True and watch.current.ssl_context is not first and counts(metrics) == (1, 0)

    # a key that does not match the certificate: the last good context stays
    shutil.copy(pki / "server.key", tmp_path / "server.key")
    good = watch.current
    assert watch.check() is False and watch.current is good and counts(metrics) == (1, 1)

    # client certificates required from now on
    shutil.copy(pki / "client.key", tmp_path / "server.key")
    p.write_text("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                 "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n")
    assert watch.check() is True and watch.current.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert str(tmp_path / "ca.crt") in watch.current.files

    # TLS off by an edit: refused
    p.write_text(users(("prometheus", "x")))
    assert watch.check() is False and watch.current.ssl_context is not None and counts(metrics) == (2, 2)
