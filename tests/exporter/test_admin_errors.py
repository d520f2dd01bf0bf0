"""exporter/source/admin/errors.py and connection.py: a failed start names its cause and the setting to
fix (the cause being in kafka-python's log lines when it gives up with a bare timeout), and
kafka-python's wire-level DEBUG logs, which carry SASL PLAIN passwords, are capped at INFO."""
from __future__ import annotations

import logging
import threading

import kafka.errors as kerr
import pytest

from kafka_jmx_sidecar.exporter.source.admin.connection import WIRE_LOGGERS, FailureLog, quiet_wire_logs
from kafka_jmx_sidecar.exporter.source.admin.errors import AdminError, connect_error, read_error
from kafka_jmx_sidecar.exporter.source.admin.settings import AdminSettings
from kafka_jmx_sidecar.exporter.source.admin.source import AdminSource
from harness.processes import free_port

SERVERS = "kafka-0:9093,kafka-1:9093"
TIMEOUT = kerr.KafkaTimeoutError("Unable to bootstrap from ['kafka-0:9093', 'kafka-1:9093']")
# lines kafka-python 3.0.12 logged against a real 4.1 SASL_SSL listener
SASL_LINE = ("<KafkaSSLTransport [127.0.0.1:37169<-42868]>: Abort ([Error 58] SaslAuthenticationFailedError: "
             "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512)")
TLS_LINE = ("Connection failed: KafkaConnectionError: Handshake failed: [SSL: CERTIFICATE_VERIFY_FAILED] "
            "certificate verify failed: self-signed certificate (_ssl.c:1006)")


def test_a_bootstrap_timeout_after_sasl_failures_is_a_sasl_error():
    e = connect_error(TIMEOUT, SERVERS, "SASL_SSL", 10, ["Bootstrap bootstrap-0 not ready", SASL_LINE])
    assert isinstance(e, AdminError)
    assert str(e).startswith(f"Kafka Admin API at {SERVERS} (SASL_SSL): SASL authentication failed: ")
    assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in str(e) and "check sidecar.admin.sasl" in str(e)


# lines kafka-python 3.0.12 logged against a real 4.4 SASL_SSL listener refusing a SCRAM password,
# when it met the broker's close before the error the broker had sent (a third of the tries)
CLOSED_LINES = ["<KafkaSSLTransport [127.0.0.1:25292<-47102]>: socket disconnected",
                "<KafkaSSLTransport [127.0.0.1:25292<-47102]>: Abort (KafkaConnectionError: socket disconnected)",
                "Bootstrap connection to bootstrap-1 failed: KafkaConnectionError: socket disconnected (backoff 0.65 secs)",
                "Bootstrap failed: KafkaTimeoutError: Unable to bootstrap from ['kafka-0:9093', 'kafka-1:9093']"]


def test_connections_closed_during_sasl_are_a_sasl_error_whether_or_not_the_answer_was_read():
    e = connect_error(TIMEOUT, SERVERS, "SASL_SSL", 10, CLOSED_LINES)
    assert str(e).startswith(f"Kafka Admin API at {SERVERS} (SASL_SSL): SASL authentication failed: the brokers "
                             f"closed every connection during authentication"), str(e)
    assert "check sidecar.admin.sasl" in str(e) and "sidecar.admin.securityProtocol" in str(e)
    # without SASL, a closed connection is no authentication failure
    assert "no broker answered" in str(connect_error(TIMEOUT, SERVERS, "SSL", 10, CLOSED_LINES))


def test_a_bootstrap_timeout_after_handshake_failures_is_a_tls_error():
    e = connect_error(TIMEOUT, SERVERS, "SSL", 10, [TLS_LINE])
    assert "TLS handshake failed: " in str(e) and "CERTIFICATE_VERIFY_FAILED" in str(e)
    assert "sidecar.admin.tls.caFile" in str(e)


def test_a_bootstrap_timeout_with_nothing_logged_names_the_servers_and_the_protocol():
    e = connect_error(TIMEOUT, SERVERS, "PLAINTEXT", 2.5, [])
    assert str(e) == (f"Kafka Admin API at {SERVERS} (PLAINTEXT): no broker answered within 2.5 s "
                      f"(KafkaTimeoutError: Unable to bootstrap from ['kafka-0:9093', 'kafka-1:9093']); check "
                      f"sidecar.admin.bootstrapServers, that the brokers run, and that the listener speaks "
                      f"PLAINTEXT (sidecar.admin.securityProtocol)")


def test_a_failed_required_request_says_what_to_grant():
    e = read_error(kerr.ClusterAuthorizationFailedError("DescribeCluster"), "DescribeCluster (the cluster's brokers)",
                   SERVERS)
    assert "DescribeCluster (the cluster's brokers) failed" in str(e) and "grant the sidecar's principal DESCRIBE" in str(e)


def test_failure_log_collects_warnings_of_kafka_loggers_only_while_open():
    with FailureLog() as failures:
        logging.getLogger("kafka.net.manager").error("Connection failed: %s", "boom")
        logging.getLogger("kafka.net.manager").debug("not a failure")
        logging.getLogger("elsewhere").error("not kafka-python's")
    logging.getLogger("kafka.net.manager").error("after")
    assert failures.messages == ["Connection failed: boom"]


def test_wire_loggers_are_capped_at_info(caplog):
    saved = {name: logging.getLogger(name).level for name in WIRE_LOGGERS}
    try:
        for name in WIRE_LOGGERS:
            logging.getLogger(name).setLevel(logging.NOTSET)
        with caplog.at_level(logging.DEBUG):
            quiet_wire_logs()
            logging.getLogger("kafka.net.connection").debug("Request 3: SaslAuthenticateRequest(auth_bytes=b'u\\x00u\\x00pw')")
            logging.getLogger("kafka.net.connection").info("connected")
        assert [r.getMessage() for r in caplog.records] == ["connected"]
        assert all(logging.getLogger(name).getEffectiveLevel() == logging.INFO for name in WIRE_LOGGERS)
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def test_an_unknown_is_logged_once_when_it_appears_and_once_when_it_clears(caplog):
    from kafka_jmx_sidecar.exporter.source.admin import convert
    from kafka_jmx_sidecar.exporter.source.admin.settings import AdminSettings
    from kafka_jmx_sidecar.exporter.source.admin.source import AdminSource
    from kafka_jmx_sidecar.exporter.source.admin.view import AdminView, Input, Reason, Unknown

    cluster = convert.cluster_from({"brokers": [{"broker_id": 1, "host": "h", "port": 1}], "cluster_id": "c",
                                    "controller_id": 1}, "Metadata")
    down = Unknown(Input.LOG_DIRS, Reason.UNREACHABLE, "broker 3 is not registered (down)", broker=3)
    source = AdminSource(AdminSettings(bootstrap_servers=("kafka-0:9092",)))  # connects only to read
    with caplog.at_level(logging.INFO, logger="kafka_jmx_sidecar.exporter.source.admin.source"):
        for unknowns in ((down,), (down,), ()):
            source._log_unknowns(AdminView(cluster, (), unknowns=unknowns))
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "Admin API: log_dirs unknown (unreachable): broker 3 is not registered (down)"),
        ("INFO", "Admin API: log_dirs of broker 3 known again")]


def test_a_start_that_fails_leaves_no_thread_of_kafka_python_running():
    # kafka-python 3.0 starts its IO thread before it bootstraps, and a failed bootstrap left it
    # running, retrying the servers, with no client to close: one more thread at every poll's
    # attempt while a broker is down or refuses the credentials
    port = free_port()  # nothing listens there
    source = AdminSource(AdminSettings(bootstrap_servers=(f"127.0.0.1:{port}",), request_timeout_seconds=0.5,
                                       client_id="failed-start"))
    for _ in range(2):
        with pytest.raises(AdminError, match="no broker answered"):
            source.connect()
    assert [t.name for t in threading.enumerate() if t.name == "kafka-io-failed-start"] == []
    assert not source.connected
