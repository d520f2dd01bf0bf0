"""Faults with a real Kafka 4.4 broker: killed while the sidecar polls it and started again (the
sidecar keeps serving the last snapshot, marked stale, then recovers by itself), a wrong JMX
password, and SSL on one side only. Each message is the one line `scrape` prints."""
from __future__ import annotations

import re
import time

import pytest

from harness.jmx_target import keystores
from harness import processes
from harness.sidecar import Serve, config_text, scrape_text

REPLICA_MANAGER = re.compile(r'^kafka_server_ReplicaManager_Value\{name="PartitionCount",\} (\S+)$', re.M)


def _value(text: str, name: str) -> str | None:
    m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    return m.group(1) if m else None


def _scrape_fails(host_port: str, head: str) -> str:
    with pytest.raises(AssertionError) as failure:
        scrape_text(host_port, "", head=head)
    message = str(failure.value)
    assert message.count("\n") == 0, message  # one line, no Java stack trace
    return message


def test_a_broker_killed_while_polled_is_served_stale_then_recovered(own_kafka, tmp_path):
    cluster = own_kafka("4.4")
    cluster.create_topic("faults", partitions=4)
    config = tmp_path / "sidecar.yml"
    # no rules: every MBean of the broker, so a poll takes long enough to be cut by the kill; the
    # series stay until the test is done (by default they are withdrawn 4 intervals, 0.8 s, after
    # the last good poll: a poll the kill leaves failing slowly would withdraw them before the
    # error is seen)
    config.write_text(config_text(cluster.jmx_host_port(1), "",
                                  "  pollIntervalSeconds: 0.2\n  withdrawAfterSeconds: 600\n"))
    with Serve(config) as sidecar:
        before = sidecar.wait_for_poll_after(time.time())
        assert REPLICA_MANAGER.search(before)
        cluster.stop_broker(1, hard=True)  # SIGKILL: no goodbye on the JMX connection
        killed = time.time()
        processes.wait_until("the sidecar to notice the dead broker",
                             lambda: _value(sidecar.get(), "jmx_scrape_error") == "1.0", 60, sidecar.process, sidecar.log)
        during = sidecar.get()
        assert REPLICA_MANAGER.search(during), "the last good snapshot is no longer served"
        assert _value(during, "kafka_jmx_sidecar_snapshot_stale") == "1.0"
        assert _value(during, "kafka_jmx_sidecar_jmx_connected") == "0.0"
        assert float(_value(during, "kafka_jmx_sidecar_last_successful_poll_timestamp_seconds")) < killed
        assert sidecar.status("/-/healthy") == 200
        cluster.start_broker(1)  # the same JMX port, a new JVM
        restarted = time.time()
        after = sidecar.wait_for_poll_after(restarted, timeout=120)
        assert REPLICA_MANAGER.search(after)
        assert _value(after, "jmx_scrape_error") == "0.0"
        assert _value(after, "kafka_jmx_sidecar_snapshot_stale") == "0.0"
        assert _value(after, "kafka_jmx_sidecar_jmx_connected") == "1.0"
        assert sidecar.process.poll() is None
    log = sidecar.log.read_text()
    assert "Traceback" not in log
    assert cluster.jmx_host_port(1) in log  # the failure is logged with the broker's address


@pytest.fixture(scope="module")
def secured(real_kafka):
    """A broker with password authentication, a read-only role, and SSL on the RMI registry and
    connector (com.sun.management.jmxremote.registry.ssl=true)."""
    return real_kafka("4.4", jmx="secure")


def _trusted(cluster, password: str) -> str:
    ks = keystores()
    return (f"username: {cluster.jmx.user}\npassword: {password}\n"
            f"ssl:\n  trustStore:\n    filename: {ks.truststore}\n    password: {ks.password}\n")


def test_the_secured_broker_is_scraped_with_credentials_and_its_trust_store(secured):
    text = scrape_text(secured.jmx_host_port(1), "", head=_trusted(secured, secured.jmx.password))
    assert REPLICA_MANAGER.search(text)


def test_a_wrong_jmx_password_is_named_without_the_password(secured):
    message = _scrape_fails(secured.jmx_host_port(1), _trusted(secured, "not-the-password"))
    assert "rejected the JMX credentials for user 'monitor'" in message
    assert "not-the-password" not in message


def test_no_trust_store_says_configure_the_trust_store(secured):
    head = f"username: {secured.jmx.user}\npassword: {secured.jmx.password}\nssl: true\n"
    message = _scrape_fails(secured.jmx_host_port(1), head)
    assert "not trusted" in message and "trust store" in message


def test_ssl_on_the_broker_only_says_set_ssl_true(secured):
    head = f"username: {secured.jmx.user}\npassword: {secured.jmx.password}\n"
    message = _scrape_fails(secured.jmx_host_port(1), head)
    assert secured.jmx_host_port(1) in message and "set ssl: true" in message


def test_ssl_on_the_sidecar_only_says_set_ssl_false(real_kafka):
    plain = real_kafka("4.4")
    message = _scrape_fails(plain.jmx_host_port(1), "ssl: true\n")
    assert plain.jmx_host_port(1) in message and "set ssl: false" in message
