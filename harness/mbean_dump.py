"""Every MBean of a JVM over remote JMX, read whole: class name, attributes with their declared
type, runtime class and value, in the text form of the reference captures the simulator's inventory
is made from (mbeans/simulator/make_inventory.py reads it):

    beans = read_mbeans("service:jmx:rmi:///jndi/rmi://127.0.0.1:9999/jmxrmi")
    beans["kafka.server:type=ReplicaManager,name=LeaderCount"].attrs["Value"]
        # ("java.lang.Object", "java.lang.Integer", 5, "5")
    Path("all-kafka-mbeans-full.txt").write_text(dump_text(beans))

It runs in the JPype JVM of this process (the sidecar's own, started if need be).
"""
from __future__ import annotations

from dataclasses import dataclass

PATTERN = "kafka.*:*"


@dataclass(frozen=True)
class Bean:
    cls: str
    attrs: dict  # attribute -> (declared type, runtime class or None, Python value, Java's text or None)


def read_mbeans(url: str, pattern: str = PATTERN) -> dict[str, Bean]:
    """ObjectName text -> Bean, for every MBean matching `pattern` (an MBean gone between the
    listing and its reading is left out)."""
    from kafka_jmx_sidecar.exporter.source.jmx.jvm import start_jvm

    start_jvm()
    import jpype
    import jpype.imports  # noqa: F401
    from javax.management import InstanceNotFoundException, ObjectName
    from javax.management.remote import JMXConnectorFactory, JMXServiceURL

    connector = JMXConnectorFactory.connect(JMXServiceURL(url), None)
    try:
        mbs = connector.getMBeanServerConnection()
        out = {}
        for on in mbs.queryNames(ObjectName(pattern), None):
            try:
                info = mbs.getMBeanInfo(on)
                names = [a.getName() for a in info.getAttributes()]
                got = {str(a.getName()): a.getValue()
                       for a in mbs.getAttributes(on, jpype.JArray(jpype.JString)(names))}
            except InstanceNotFoundException:
                continue
            attrs = {}
            for a in info.getAttributes():
                v = got.get(str(a.getName()))
                attrs[str(a.getName())] = (str(a.getType()), None if v is None else str(v.getClass().getName()),
                                           _python(v), None if v is None else str(v.toString()))
            out[str(on.toString())] = Bean(str(info.getClassName()), attrs)
        return out
    finally:
        connector.close()


def _python(v):
    if v is None:
        return None
    cls = str(v.getClass().getName())
    if cls in ("java.lang.Integer", "java.lang.Long", "java.lang.Short", "java.lang.Byte"):
        return int(v)
    if cls in ("java.lang.Double", "java.lang.Float"):
        return float(v)
    return str(v.toString())


def dump_text(beans: dict[str, Bean], pattern: str = PATTERN) -> str:
    """The reference capture's format: a header line, then per MBean `NAME   [CLASS]` and per
    readable attribute `    NAME : DECLARED = VALUE  (RUNTIME)` (an attribute that read as null
    is left out)."""
    lines = [f"### pattern {pattern} -> {len(beans)} MBeans"]
    for name, bean in beans.items():
        lines.append(f"{name}   [{bean.cls}]")
        lines += [f"    {attr} : {declared} = {text}  ({runtime})"
                  for attr, (declared, runtime, _value, text) in bean.attrs.items() if runtime is not None]
    return "\n".join(lines) + "\n"
