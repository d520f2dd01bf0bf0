"""The Admin API source over TLS and SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) on a real Kafka 4.4
cluster with ACLs (harness/kafka.py SecureClients: a SASL_SSL listener, StandardAuthorizer):

- a super user over SASL_SSL reads what a PLAINTEXT client reads, value for value;
- SCRAM users granted DESCRIBE and DESCRIBE_CONFIGS read the same;
- a principal allowed only DESCRIBE on one topic reads that topic's partitions, and every other
  input is an Unknown with reason `unauthorized` (reassignments, min ISR, broker configs, log
  dirs), never a value; the min ISR falls back to the configured one;
- a wrong password, an untrusted certificate and a dead listener fail with an AdminError that
  names the setting to fix; no password appears in any log record (kafka-python's DEBUG
  included) or error text.
"""
from __future__ import annotations

import logging
import uuid

import pytest

from kafka_jmx_sidecar.exporter.source.admin.errors import AdminError
from kafka_jmx_sidecar.exporter.source.admin.fallback import MinIsrResolver
from kafka_jmx_sidecar.exporter.source.admin.settings import AdminSettings, SaslSettings, Secret, TlsSettings
from kafka_jmx_sidecar.exporter.source.admin.source import AdminSource
from kafka_jmx_sidecar.exporter.source.admin.view import Input, Reason
from harness import processes
from harness.kafka import KafkaCluster, SecureClients

PASSWORDS = {user: uuid.uuid4().hex for user in ("admin", "monitor", "scram256", "scram512")}


@pytest.fixture(scope="module")
def kafka():
    secure = SecureClients(users={u: PASSWORDS[u] for u in ("admin", "monitor")}, super_users=("admin",))
    cluster = KafkaCluster("4.4", brokers=3, secure_clients=secure)
    pids = []
    try:
        cluster.start()
        pids = cluster.pids()
        cluster.create_topics({"orders": dict(assignment=[[1, 2, 3], [2, 3, 1]], min_isr=2),
                               "private": dict(assignment=[[3]])})
        cluster.produce("orders", records=2000)
        _grant(cluster)
        yield cluster
    finally:
        cluster.remove()
        assert not [p for p in pids if processes.pid_alive(p)]


def _grant(cluster: KafkaCluster) -> None:
    """SCRAM credentials and ACLs, through the Admin API over PLAINTEXT (a super user there)."""
    from kafka import KafkaAdminClient
    from kafka.admin import (ACL, ACLOperation, ACLPermissionType, ResourcePattern, ResourceType,
                             ScramMechanism, UserScramCredentialUpsertion)

    with KafkaAdminClient(bootstrap_servers=cluster.bootstrap) as admin:
        result = admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion("scram256", ScramMechanism.SCRAM_SHA_256, PASSWORDS["scram256"]),
            UserScramCredentialUpsertion("scram512", ScramMechanism.SCRAM_SHA_512, PASSWORDS["scram512"])])
        assert result == {"scram256": None, "scram512": None}, result
        acls = [ACL(f"User:{user}", "*", op, ACLPermissionType.ALLOW, ResourcePattern(kind, name))
                for user in ("scram256", "scram512")
                for kind, name in ((ResourceType.CLUSTER, "kafka-cluster"), (ResourceType.TOPIC, "*"))
                for op in (ACLOperation.DESCRIBE, ACLOperation.DESCRIBE_CONFIGS)]
        acls.append(ACL("User:monitor", "*", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
                        ResourcePattern(ResourceType.TOPIC, "orders")))
        created = admin.create_acls(acls)
        assert not created["failed"], created["failed"]


def _settings(kafka: KafkaCluster, user: str, mechanism: str, tmp_path, password: str | None = None,
              ca: str | None = None) -> AdminSettings:
    secret = tmp_path / f"{user}-password"
    secret.write_text((password or PASSWORDS[user]) + "\n")
    return AdminSettings(
        bootstrap_servers=tuple(kafka.secure_bootstrap.split(",")), request_timeout_seconds=10,
        tls=TlsSettings(ca_file=ca or str(kafka.secure_clients.ca_pem), check_hostname=True),
        sasl=SaslSettings(mechanism, user, Secret("sidecar.admin.sasl.passwordFile", file=str(secret))))


def _plaintext_view(kafka: KafkaCluster):
    with AdminSource(AdminSettings(bootstrap_servers=tuple(kafka.bootstrap.split(",")))) as source:
        return source.read()


def _comparable(view):
    """What a read knows, less what depends on the listener (each listener advertises its own
    ports) and on the answering broker (KRaft names a random live broker as the controller)."""
    cluster = view.cluster.cluster_id, view.cluster.live_brokers, [(b.id, b.host, b.rack) for b in view.cluster.brokers]
    sizes = {(r.broker, r.topic, r.partition) for r in view.replica_sizes}
    return cluster, view.partitions, view.topics, view.brokers, sizes, view.unknowns


@pytest.fixture(autouse=True)
def no_password_logged(caplog):
    """Every test: kafka-python and the source log at DEBUG, and no password shows."""
    with caplog.at_level(logging.DEBUG):
        yield
    text = "\n".join(r.getMessage() for r in caplog.get_records("call"))
    for password in PASSWORDS.values():
        assert password not in text
    assert "Starting KafkaAdminClient with configuration" in text  # the line that would show it


@pytest.mark.parametrize("user, mechanism", [("admin", "PLAIN"), ("scram256", "SCRAM-SHA-256"),
                                             ("scram512", "SCRAM-SHA-512")])
def test_sasl_ssl_reads_what_plaintext_reads(kafka, tmp_path, user, mechanism):
    expected = _plaintext_view(kafka)
    assert expected.unknowns == () and {p.topic for p in expected.partitions} == {"orders", "private"}
    with AdminSource(_settings(kafka, user, mechanism, tmp_path)) as source:
        view = source.read()
    assert view.cluster.may_describe and view.cluster.may_describe_configs
    assert _comparable(view) == _comparable(expected)
    assert view.topics["orders"].min_isr == 2


def test_a_principal_with_describe_on_one_topic_gets_unknowns_not_values(kafka, tmp_path):
    with AdminSource(_settings(kafka, "monitor", "PLAIN", tmp_path)) as source:
        view = source.read()
    assert {p.topic for p in view.partitions} == {"orders"}  # Kafka leaves out topics it may not describe
    assert (view.cluster.may_describe, view.cluster.may_describe_configs) == (False, False)
    reasons = {(u.input, u.reason, u.broker, u.topic) for u in view.unknowns}
    assert reasons == {
        (Input.REASSIGNMENTS, Reason.UNAUTHORIZED, None, None),
        (Input.MIN_ISR, Reason.UNAUTHORIZED, None, "orders"),
        *((what, Reason.UNAUTHORIZED, b, None)
          for b in (1, 2, 3) for what in (Input.BROKER_MIN_ISR, Input.THROTTLE_RATES, Input.LOG_DIRS)),
    }, view.unknowns
    assert view.topics["orders"].min_isr is None
    assert view.brokers == {b: view.brokers[b] for b in (1, 2, 3)}
    assert all(c.min_isr is None and c.leader_throttled_rate is None for c in view.brokers.values())
    assert view.replica_sizes == ()
    for u in view.unknowns:
        assert "grant the sidecar's principal" in u.detail, u
    resolver = MinIsrResolver(view, configured_topics={"orders": 2})
    assert resolver.resolve("orders") == (2, "configured")
    assert MinIsrResolver(view).resolve("orders") == (1, "kafka_default")


def test_a_wrong_password_names_the_sasl_settings(kafka, tmp_path):
    with pytest.raises(AdminError) as e:
        with AdminSource(_settings(kafka, "scram512", "SCRAM-SHA-512", tmp_path, password="wrong-" + PASSWORDS["monitor"])) as source:
            source.read()
    text = str(e.value)
    assert "SASL authentication failed" in text and "sidecar.admin.sasl" in text, text
    assert kafka.secure_bootstrap.split(",")[0] in text
    assert PASSWORDS["monitor"] not in text


def test_an_untrusted_certificate_names_the_ca_file(kafka, tmp_path):
    other_ca = tmp_path / "other-ca.pem"
    other_ca.write_text(_self_signed_pem())  # a CA that did not sign the brokers' certificate
    with pytest.raises(AdminError) as e:
        with AdminSource(_settings(kafka, "admin", "PLAIN", tmp_path, ca=str(other_ca))) as source:
            source.read()
    assert "TLS handshake failed" in str(e.value) and "tls.caFile" in str(e.value), str(e.value)


def test_no_listener_names_the_bootstrap_servers(tmp_path):
    port = processes.free_port()
    settings = AdminSettings(bootstrap_servers=(f"127.0.0.1:{port}",), request_timeout_seconds=2)
    with pytest.raises(AdminError) as e:
        with AdminSource(settings) as source:
            source.read()
    text = str(e.value)
    assert f"127.0.0.1:{port}" in text and "no broker answered within 2 s" in text
    assert "sidecar.admin.bootstrapServers" in text


def _self_signed_pem() -> str:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "not-the-broker-ca")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert.public_bytes(serialization.Encoding.PEM).decode()
