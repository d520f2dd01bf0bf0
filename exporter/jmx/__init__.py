"""The JMX client: a Kafka broker's MBeans over remote JMX/RMI, through an in-process JVM (JPype).

Read-only: queryNames, getMBeanInfo, getAttributes and getAttribute are the only calls made.
See client.py for what is cached and how connections are kept; errors.py for the messages.
"""
from exporter.jmx.client import JmxClient, JmxStats
from exporter.jmx.errors import (JmxAuthError, JmxConfigError, JmxConnectionError, JmxError, JmxSslError,
                                 JmxStubError, JmxTimeoutError, JmxUnreachableError)
from exporter.jmx.jvm import start_jvm
from exporter.jmx.client_settings import JmxSettings

__all__ = [
    "JmxClient", "JmxStats", "JmxSettings", "start_jvm",
    "JmxError", "JmxConfigError", "JmxConnectionError", "JmxUnreachableError", "JmxStubError",
    "JmxAuthError", "JmxSslError", "JmxTimeoutError",
]
