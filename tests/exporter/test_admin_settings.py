"""exporter/source/admin/settings.py, connection.py and fallback.py: the proposed `sidecar.admin` keys,
passwords from files or the environment only (and never printed), and the min ISR fallbacks."""
from __future__ import annotations

import logging

import pytest

from kafka_jmx_sidecar.exporter.source.admin import convert
from kafka_jmx_sidecar.exporter.source.admin.connection import Masked, client_options
from kafka_jmx_sidecar.exporter.source.admin.fallback import MinIsrResolver, reassignments_known
from kafka_jmx_sidecar.exporter.base.config_file import ConfigError, ConfigFile
from kafka_jmx_sidecar.exporter.source.admin.settings import AdminConfigError, Secret, admin_settings
from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, BrokerConfig, Input, Partition, Reason, TopicConfig, Unknown


ERROR = ConfigFile("sidecar.yml").error  # names file, line and key, as for every setting


def test_plain_settings_and_their_client_options():
    s = admin_settings({"bootstrapServers": "kafka-0:9092, kafka-1:9092", "requestTimeoutSeconds": 5}, ERROR)
    assert s.bootstrap_servers == ("kafka-0:9092", "kafka-1:9092") and s.protocol == "PLAINTEXT"
    options = client_options(s)
    assert options["bootstrap_servers"] == ["kafka-0:9092", "kafka-1:9092"]
    assert (options["security_protocol"], options["request_timeout_ms"], options["bootstrap_timeout_ms"]) == \
        ("PLAINTEXT", 5000, 5000)
    assert not any(k.startswith(("ssl_", "sasl_")) for k in options)


def test_tls_and_sasl_imply_the_protocol_and_read_the_password_file(tmp_path):
    pw = tmp_path / "sasl-password"
    pw.write_text("s3cr3t-pass\n")
    s = admin_settings({
        "bootstrapServers": ["kafka-0:9093"],
        "tls": {"caFile": "/ca.crt", "certFile": "/tls.crt", "keyFile": "/tls.key", "keyPasswordEnv": "KEY_PW",
                "checkHostname": False},
        "sasl": {"mechanism": "scram-sha-512", "username": "sidecar", "passwordFile": str(pw)},
    }, ERROR)
    assert s.protocol == "SASL_SSL" and s.sasl.mechanism == "SCRAM-SHA-512"
    options = client_options(s, environ={"KEY_PW": "key-pass"})
    assert (options["ssl_cafile"], options["ssl_certfile"], options["ssl_keyfile"], options["ssl_check_hostname"]) == \
        ("/ca.crt", "/tls.crt", "/tls.key", False)
    assert options["sasl_plain_password"] == "s3cr3t-pass" and options["ssl_password"] == "key-pass"
    assert (options["sasl_mechanism"], options["sasl_plain_username"]) == ("SCRAM-SHA-512", "sidecar")
    # the password is itself on the wire, and '<secret>' wherever it is printed
    assert options["sasl_plain_password"].encode() == b"s3cr3t-pass"
    printed = "%s %r %s" % (options, options, f"{options['sasl_plain_password']}")
    assert "s3cr3t-pass" not in printed and "key-pass" not in printed and "<secret>" in printed
    assert "s3cr3t-pass" not in repr(s) and "s3cr3t-pass" not in str(s)


def test_kafka_python_debug_log_of_its_configuration_shows_no_password(caplog):
    # kafka-python logs its whole configuration at DEBUG when a client starts
    options = {"sasl_plain_password": Masked("s3cr3t-pass"), "ssl_password": Masked("key-pass")}
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("kafka.admin.client").debug("Starting KafkaAdminClient with configuration: %s", options)
    assert "<secret>" in caplog.text and "s3cr3t-pass" not in caplog.text and "key-pass" not in caplog.text


@pytest.mark.parametrize("raw, key, words", [
    ({}, "sidecar.admin.bootstrapServers", "missing"),
    ({"bootstrapServers": "kafka-0"}, "sidecar.admin.bootstrapServers", "host:port"),
    ({"bootstrapServers": "k:9092", "securityProtocol": "SASL_SSL"}, "sidecar.admin.sasl", "needs a sasl block"),
    ({"bootstrapServers": "k:9092", "securityProtocol": "TLS"}, "sidecar.admin.securityProtocol", "unknown protocol"),
    ({"bootstrapServers": "k:9092", "sasl": {"mechanism": "GSSAPI", "username": "u", "passwordEnv": "P"}},
     "sidecar.admin.sasl.mechanism", "not supported"),
    ({"bootstrapServers": "k:9092", "sasl": {"mechanism": "PLAIN", "username": "u", "password": "inline"}},
     "sidecar.admin.sasl.password", "from a file or the environment only"),
    ({"bootstrapServers": "k:9092", "sasl": {"mechanism": "PLAIN", "username": "u"}},
     "sidecar.admin.sasl.passwordFile", "no password source"),
    ({"bootstrapServers": "k:9092", "sasl": {"mechanism": "PLAIN", "username": "u", "passwordFile": "/a",
                                             "passwordEnv": "B"}}, "sidecar.admin.sasl.passwordFile", "both"),
    ({"bootstrapServers": "k:9092", "tls": {"certFile": "/c"}}, "sidecar.admin.tls", "go together"),
    ({"bootstrapServers": "k:9092", "tls": {"checkHostname": "no"}}, "sidecar.admin.tls.checkHostname", "true or false"),
    ({"bootstrapServers": "k:9092", "requestTimeoutSeconds": 0}, "sidecar.admin.requestTimeoutSeconds", "> 0"),
    ({"bootstrapServers": "k:9092", "topics": ["a"]}, "sidecar.admin.topics", "unknown setting"),
])
def test_settings_errors_name_the_key_and_the_fix(raw, key, words):
    with pytest.raises(ConfigError) as e:
        admin_settings(raw, ERROR)
    assert e.value.key == key and words in str(e.value) and e.value.fix


def test_a_missing_secret_says_where_it_was_looked_for(tmp_path):
    with pytest.raises(AdminConfigError) as e:
        Secret("sidecar.admin.sasl.passwordFile", file=str(tmp_path / "nope")).reveal()
    assert str(tmp_path / "nope") in str(e.value) and "sidecar.admin.sasl.passwordFile" in str(e.value)
    with pytest.raises(AdminConfigError) as e:
        Secret("sidecar.admin.sasl.passwordEnv", env="SIDECAR_PW").reveal(environ={})
    assert "SIDECAR_PW" in str(e.value) and "unset" in str(e.value)
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(AdminConfigError, match="is empty"):
        Secret("k", file=str(tmp_path / "empty")).reveal()


# --- fallbacks -----------------------------------------------------------------------------------

def _view(topics, brokers, unknowns=(), live=(1, 2)):
    cluster = convert.cluster_from({"brokers": [{"broker_id": b, "host": "h", "port": 1} for b in live],
                                    "cluster_id": "c", "controller_id": live[0]}, "Metadata")
    partitions = tuple(Partition(t, 0, 1, (1, 2), (1, 2)) for t in ("a", "b", "c"))
    return AdminView(cluster, partitions, topics, brokers, (), tuple(unknowns))


def test_min_isr_from_the_admin_api_then_configured_then_broker_default_then_kafka_default():
    topics = {"a": TopicConfig(2), "b": TopicConfig(None), "c": TopicConfig(None)}
    brokers = {1: BrokerConfig(min_isr=3), 2: BrokerConfig(min_isr=3)}
    r = MinIsrResolver(_view(topics, brokers), configured_topics={"b": 4}, configured_default=5)
    assert [r.resolve(t) for t in "abc"] == [(2, "admin"), (4, "configured"), (3, "admin_broker_default")]
    assert r("a") == 2
    assert r.fallbacks() == {"b": (4, "configured"), "c": (3, "admin_broker_default")}
    # brokers that disagree (or none known) give no broker default
    disagree = {1: BrokerConfig(min_isr=3), 2: BrokerConfig(min_isr=2)}
    r = MinIsrResolver(_view(topics, disagree), configured_default=5)
    assert r.resolve("c") == (5, "configured_default")
    assert MinIsrResolver(_view(topics, {})).resolve("c") == (1, "kafka_default")


def test_reassignments_known_unless_an_unknown_says_otherwise():
    assert reassignments_known(_view({}, {}))
    unsupported = Unknown(Input.REASSIGNMENTS, Reason.UNSUPPORTED, "broker 2.2 has no ListPartitionReassignments")
    view = _view({}, {}, [unsupported])
    assert not reassignments_known(view)
    # unknown reassignments read as none in the states (kafka-topics.sh's fallback)
    assert all(s.adding_replicas == () and s.removing_replicas == () for s in view.partition_states(lambda t: 1))
