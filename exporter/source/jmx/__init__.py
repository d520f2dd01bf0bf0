"""The JMX client: a Kafka broker's MBeans over remote JMX/RMI, through an in-process JVM (JPype).

Read-only: the only calls made are queryNames, queryMBeans, getDomains, getObjectInstance,
getMBeanInfo, getAttributes and getAttribute.

    client.py           JmxClient, what callers use: what is cached, and when it is refreshed
    connections.py      the connections, kept across polls; reconnects and backoff
    listing.py          the listed names, and per-partition families as columns (Members)
    mbean_info.py       MBeanInfo, per name and per family
    filters.py          jmx_exporter's include/exclude filters
    read_plan.py        what one read asks for, and the MBeans made of the answer
    queries.py          server-side conditions (QueryExp)
    stats.py            round trips and the other counters
    engine.py           what an engine returns; java_engine.py (the helper, SidecarJmx.java)
                        and jpype_engine.py (plain JPype calls) do the JVM-side work
    convert.py          Java values and the helper's text -> Python values
    errors.py           Java exceptions -> errors that say what to set
    jvm.py              the in-process JVM, and the helper compiled into it
    client_settings.py  JmxSettings: what the client needs to know
"""
from kafka_jmx_sidecar.exporter.source.jmx.client import JmxClient
from kafka_jmx_sidecar.exporter.source.jmx.errors import (JmxAuthError, JmxConfigError, JmxConnectionError, JmxError, JmxMemoryError,
                                 JmxSslError, JmxStoppedError, JmxStubError, JmxTimeoutError, JmxUnreachableError)
from kafka_jmx_sidecar.exporter.source.jmx.jvm import start_jvm
from kafka_jmx_sidecar.exporter.source.jmx.client_settings import JmxSettings
from kafka_jmx_sidecar.exporter.source.jmx.stats import JmxStats

__all__ = [
    "JmxClient", "JmxStats", "JmxSettings", "start_jvm",
    "JmxError", "JmxConfigError", "JmxConnectionError", "JmxUnreachableError", "JmxStubError",
    "JmxAuthError", "JmxSslError", "JmxTimeoutError", "JmxMemoryError", "JmxStoppedError",
]
