"""A plain JMX client for the simulator tests: JPype and the JDK's own JMX/RMI classes.

JPype starts one JVM per process; tests that need different JVM options (an SSL trust store) run
this module in a subprocess (`python -m tests.simulator.sim_jmx ...` from the repository root, see
test_security.py).
"""
from __future__ import annotations

import jpype
import jpype.imports  # noqa: F401  (enables `from javax... import`)


def start_jvm(*options: str) -> None:
    if not jpype.isJVMStarted():
        jpype.startJVM(*options, convertStrings=False)


class Jmx:
    """One JMX connection: `get(name, attr)`, `names(pattern)`, `info(name)`, `dump(pattern)`."""

    def __init__(self, url: str, user: str | None = None, password: str | None = None, ssl_registry: bool = False):
        start_jvm()
        from java.lang import String
        from java.util import HashMap
        from javax.management.remote import JMXConnector, JMXConnectorFactory, JMXServiceURL

        env = HashMap()
        if user is not None:
            env.put(JMXConnector.CREDENTIALS, jpype.JArray(String)([user, password]))
        if ssl_registry:
            from javax.rmi.ssl import SslRMIClientSocketFactory

            env.put("com.sun.jndi.rmi.factory.socket", SslRMIClientSocketFactory())
        self.connector = JMXConnectorFactory.connect(JMXServiceURL(url), env)
        self.mbs = self.connector.getMBeanServerConnection()

    def close(self) -> None:
        try:
            self.connector.close()
        except Exception:
            pass

    @staticmethod
    def on(name: str):
        from javax.management import ObjectName

        return ObjectName(name)

    def names(self, pattern: str = "kafka.*:*", query=None) -> list[str]:
        return sorted(str(n.toString()) for n in self.mbs.queryNames(self.on(pattern), query))

    def names_where_value(self, pattern: str, value: int) -> list[str]:
        from javax.management import Query

        q = Query.eq(Query.attr("Value"), Query.value(jpype.JInt(value)))
        return self.names(pattern, q)

    def get(self, name: str, attr: str = "Value"):
        return to_py(self.mbs.getAttribute(self.on(name), attr))

    def value(self, name: str) -> int:
        return int(self.get(name, "Value"))

    def count(self, name: str) -> int:
        return int(self.get(name, "Count"))

    def exists(self, name: str) -> bool:
        return bool(self.mbs.isRegistered(self.on(name)))

    def info(self, name: str) -> tuple[str, list[tuple[str, str, str]]]:
        """(MBeanInfo class name, [(attribute, declared type, description)])."""
        i = self.mbs.getMBeanInfo(self.on(name))
        return str(i.getClassName()), [(str(a.getName()), str(a.getType()), str(a.getDescription()))
                                       for a in i.getAttributes()]

    def dump(self, pattern: str = "kafka.*:*") -> dict[str, dict]:
        """name -> {"class": ..., "attrs": {attr: (declared type, runtime class, value)}}."""
        out = {}
        for on in self.mbs.queryNames(self.on(pattern), None):
            info = self.mbs.getMBeanInfo(on)
            attrs = {}
            names = [a.getName() for a in info.getAttributes()]
            values = {str(a.getName()): a.getValue() for a in self.mbs.getAttributes(on, jpype.JArray(jpype.JString)(names))}
            for a in info.getAttributes():
                v = values.get(str(a.getName()))
                attrs[str(a.getName())] = (str(a.getType()), None if v is None else str(v.getClass().getName()), to_py(v))
            out[str(on.toString())] = {"class": str(info.getClassName()), "attrs": attrs}
        return out


def to_py(v):
    if v is None:
        return None
    for cls, conv in (("java.lang.Integer", int), ("java.lang.Long", int), ("java.lang.Short", int),
                      ("java.lang.Byte", int), ("java.lang.Double", float), ("java.lang.Float", float),
                      ("java.lang.Boolean", bool)):
        if v.getClass().getName() == cls:
            return conv(v)
    return str(v.toString())


def main(argv: list[str] | None = None) -> int:
    """`python -m tests.simulator.sim_jmx URL --get NAME [ATTR] [--user U --password P] [--ssl-registry]
    [--truststore F --truststore-password P]`: one read in a fresh JVM; prints JSON
    {"value": ...} or {"error": "<Java class>", "message": "..."} (exit 0 either way)."""
    import argparse
    import json

    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--get", nargs="+", required=True, metavar=("NAME", "ATTR"))
    ap.add_argument("--user")
    ap.add_argument("--password")
    ap.add_argument("--ssl-registry", action="store_true")
    ap.add_argument("--truststore")
    ap.add_argument("--truststore-password")
    a = ap.parse_args(argv)
    options = []
    if a.truststore:
        options += [f"-Djavax.net.ssl.trustStore={a.truststore}",
                    f"-Djavax.net.ssl.trustStorePassword={a.truststore_password}"]
    start_jvm(*options)
    try:
        j = Jmx(a.url, user=a.user, password=a.password, ssl_registry=a.ssl_registry)
        value = j.get(a.get[0], a.get[1] if len(a.get) > 1 else "Value")
        j.close()
        print(json.dumps({"value": value}))
    except Exception as e:  # a Java exception through JPype
        cause, messages = e, []
        while cause is not None:
            messages.append(str(cause))
            cause = getattr(cause, "getCause", lambda: None)()
        print(json.dumps({"error": type(e).__name__, "message": " | ".join(messages)}))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
