"""Errors a user meets, against real JVMs: each names host:port and what to set.

The scenarios need JVM options of their own (short RMI timeouts, a trust store), and JPype
starts one JVM per process, so each group runs in a subprocess (`python -c` calling a function
of this module) that prints one JSON line per scenario; the tests check those lines.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_jmx_sidecar.exporter.source.jmx import JmxConfigError, JmxSettings

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 2.0  # the read timeout in the subprocesses, and the connect timeout of the paused broker
CONNECT = 10.0  # other connects: an SSL handshake in a cold JVM on a busy machine can take seconds


def _emit(label: str, started: float, error: Exception | None = None, **extra) -> None:
    line = {"label": label, "seconds": round(time.monotonic() - started, 2), **extra}
    if error is not None:
        line.update(error=type(error).__name__, message=getattr(error, "message", str(error)))
    print(json.dumps(line), flush=True)


def _attempt(label: str, **kw):
    from kafka_jmx_sidecar.exporter.source.jmx import JmxClient, JmxError, JmxSettings

    kw.setdefault("connect_timeout_seconds", CONNECT)
    kw.setdefault("read_timeout_seconds", TIMEOUT)
    started = time.monotonic()
    try:
        c = JmxClient(JmxSettings(**kw))
        names = c.list_names()
    except JmxError as e:
        _emit(label, started, e)
        return None
    _emit(label, started, names=len(names))
    return c


def _scenarios_plain(engine: str) -> None:
    """Refused, credentials, SSL on one side only, untrusted certificate, stub elsewhere, paused JVM."""
    from kafka_jmx_sidecar.exporter.source.jmx import JmxError
    from harness.jmx_target import Target
    from harness.processes import free_port

    _attempt("refused", host_port=f"127.0.0.1:{free_port()}", engine=engine)
    with Target(auth=("monitor", "s3cret")) as t:
        _attempt("no-credentials", host_port=t.host_port, engine=engine)
        _attempt("wrong-password", host_port=t.host_port, username="monitor", password="nope", engine=engine)
        _attempt("good-password", host_port=t.host_port, username="monitor", password="s3cret", engine=engine)
        _attempt("ssl-client-plain-broker", host_port=t.host_port, ssl=True, engine=engine)
    with Target(ssl=True) as t:
        _attempt("plain-client-ssl-broker", host_port=t.host_port, engine=engine)
        _attempt("no-trust-store", host_port=t.host_port, ssl=True, engine=engine)
    with Target(advertised_host="127.0.0.2") as t:  # the broker listens on 127.0.0.1 only
        _attempt("stub-elsewhere", jmx_url=t.url, engine=engine)
    with Target(advertised_host="broker-7.kafka.svc.invalid") as t:
        _attempt("stub-unresolvable", host_port=t.host_port, engine=engine)
    with Target(topics=1, partitions=5) as t:
        c = _attempt("before-pause", host_port=t.host_port, include_object_names=("kafka.*:*",), engine=engine)
        c.read()
        t.pause()
        started = time.monotonic()
        try:
            c.read()
            _emit("paused-read", started)
        except JmxError as e:
            _emit("paused-read", started, e)
        _attempt("paused-connect", host_port=t.host_port, engine=engine, connect_timeout_seconds=TIMEOUT)
        t.resume()
        time.sleep(TIMEOUT)  # past the first reconnect backoff (1 s)
        started = time.monotonic()
        _emit("resumed", started, mbeans=len(c.read()))


def _scenarios_ssl() -> None:
    """A trusted SSL broker with authentication; then another trust store in the same process."""
    from kafka_jmx_sidecar.exporter.source.jmx import JmxConfigError, JmxSettings, start_jvm
    from harness.jmx_target import Target, keystores

    ks = keystores()
    settings = dict(ssl=True, trust_store=str(ks.truststore), trust_store_password=ks.password,
                    trust_store_type="PKCS12", connect_timeout_seconds=CONNECT, read_timeout_seconds=CONNECT)
    with Target(auth=("monitor", "s3cret"), ssl=True) as t:
        c = _attempt("ssl-auth", host_port=t.host_port, username="monitor", password="s3cret",
                     include_object_names=("test:type=Types",), **settings)
        started = time.monotonic()
        (types,) = c.read()
        _emit("ssl-read", started, integer={a.name: a.value for a in types.attributes}["Integer"])
        _attempt("ssl-wrong-password", host_port=t.host_port, username="monitor", password="nope", **settings)
    started = time.monotonic()
    try:
        start_jvm(JmxSettings(host_port="h:1", **{**settings, "trust_store": "/elsewhere/trust.p12"}))
        _emit("other-trust-store", started)
    except JmxConfigError as e:
        _emit("other-trust-store", started, e)


def _run(call: str, timeout: float = 120.0) -> dict[str, dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([sys.executable, "-c", f"import tests.exporter.test_jmx_errors as m; m.{call}"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return {x["label"]: x for x in lines}


@pytest.fixture(scope="module", params=["java", "jpype"])
def plain(request):
    return _run(f"_scenarios_plain({request.param!r})")


@pytest.fixture(scope="module")
def ssl():
    return _run("_scenarios_ssl()")


def _check(line: dict, error: str, *phrases: str) -> None:
    assert line.get("error") == error, line
    msg = line["message"]
    for p in phrases:
        assert p in msg, (p, msg)
    # one line for a user: no Java stack trace, no nested-exception noise
    assert "\n" not in msg and "\tat " not in msg and "nested exception" not in msg, msg


def test_refused_connection_names_the_port_and_jmx_settings(plain):
    _check(plain["refused"], "JmxUnreachableError", "127.0.0.1:", "connection refused",
           "-Dcom.sun.management.jmxremote.port", "is the port right")


def test_missing_and_wrong_credentials(plain):
    _check(plain["no-credentials"], "JmxAuthError", "requires JMX credentials", "set username and password")
    _check(plain["wrong-password"], "JmxAuthError", "rejected the JMX credentials", "'monitor'",
           "check username and password")
    assert plain["good-password"]["names"] > 10


def test_ssl_on_one_side_only(plain):
    _check(plain["ssl-client-plain-broker"], "JmxSslError", "does not speak SSL", "set ssl: false")
    _check(plain["plain-client-ssl-broker"], "JmxSslError", "set ssl: true")


def test_untrusted_certificate_says_to_configure_the_trust_store(plain):
    _check(plain["no-trust-store"], "JmxSslError", "not trusted", "trust store", "javax.net.ssl.trustStore")


def test_stub_advertising_another_host_says_to_set_the_rmi_hostname(plain):
    line = plain["stub-elsewhere"]
    _check(line, "JmxStubError", "answered, but the RMI server it advertises (127.0.0.2:", "refused",
           "-Djava.rmi.server.hostname=", "-Dcom.sun.management.jmxremote.rmi.port=")
    _check(plain["stub-unresolvable"], "JmxStubError", "broker-7.kafka.svc.invalid", "does not resolve",
           "-Djava.rmi.server.hostname=")


def test_a_stopped_jvm_times_out_within_the_configured_bound(plain):
    _check(plain["paused-read"], "JmxTimeoutError", "did not answer", f"within {TIMEOUT:g} s",
           "readTimeoutSeconds")
    assert TIMEOUT - 0.2 <= plain["paused-read"]["seconds"] <= TIMEOUT + 1.5
    _check(plain["paused-connect"], "JmxTimeoutError", "did not complete the JMX connection",
           "connectTimeoutSeconds")
    assert plain["paused-connect"]["seconds"] <= TIMEOUT + 1.5
    # 3 Partition gauges x 5, a topic's and the broker's meter, ReplicaManager, Fetch
    assert plain["resumed"]["mbeans"] == 19


def test_ssl_with_trust_store_and_credentials_reads(ssl):
    assert ssl["ssl-auth"]["names"] == 1 and ssl["ssl-read"]["integer"] == -42
    _check(ssl["ssl-wrong-password"], "JmxAuthError", "rejected the JMX credentials")


def test_jvm_options_are_fixed_once_ssl_was_used(ssl):
    _check(ssl["other-trust-store"], "JmxConfigError", "javax.net.ssl.trustStore", "/elsewhere/trust.p12",
           "restart the sidecar")


def test_settings_are_checked_before_any_connection():
    with pytest.raises(JmxConfigError, match="both hostPort and jmxUrl"):
        JmxSettings(host_port="a:1", jmx_url="service:jmx:rmi:///jndi/rmi://a:1/jmxrmi")
    with pytest.raises(JmxConfigError, match="not host:port"):
        JmxSettings(host_port="broker")
    with pytest.raises(JmxConfigError, match="not a JMX service URL"):
        JmxSettings(jmx_url="http://broker:9999")
    s = JmxSettings(jmx_url="service:jmx:rmi:///jndi/rmi://broker-1.kafka:9999/jmxrmi")
    assert s.endpoint == "broker-1.kafka:9999" and s.host == "broker-1.kafka"
    assert JmxSettings(host_port="b:7071").url == "service:jmx:rmi:///jndi/rmi://b:7071/jmxrmi"
    with pytest.raises(JmxConfigError, match="set hostPort"):
        JmxSettings().url


def test_this_sides_out_of_memory_error_says_raise_jvm_max_heap_and_the_brokers_does_not():
    """An OutOfMemoryError of the sidecar's own JVM (on the caller's thread, or a pool thread's
    through ExecutionException) names sidecar.jvmMaxHeap; the broker's own (RMI's ServerError
    carries it) is the broker's problem and is not reported as ours."""
    import jpype

    from kafka_jmx_sidecar.exporter.source.jmx import JmxMemoryError, start_jvm
    from kafka_jmx_sidecar.exporter.source.jmx.errors import translate

    start_jvm()
    oom = jpype.JClass("java.lang.OutOfMemoryError")("Java heap space")
    for thrown in (oom, jpype.JClass("java.util.concurrent.ExecutionException")(oom)):
        e = translate(thrown, "broker-1:9999", doing="queryNames")
        assert isinstance(e, JmxMemoryError), e
        assert "ran out of heap during queryNames of broker-1:9999" in e.message
        assert "raise sidecar.jvmMaxHeap" in e.message and "its ceiling: " in e.message and " MB)" in e.message
    theirs = translate(jpype.JClass("java.rmi.ServerError")("Error occurred in server thread", oom), "broker-1:9999",
                       doing="getAttributes")
    assert not isinstance(theirs, JmxMemoryError) and "jvmMaxHeap" not in theirs.message
