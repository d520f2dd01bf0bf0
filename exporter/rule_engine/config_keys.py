"""The jmx_exporter keys of the configuration file, as the sidecar reads them (rule_engine/config.py
takes its known keys, the flags and the rules' keys from here; the `sidecar:` key is the sidecar's,
exporter/config/sidecar.py, `httpServer:` is exporter/http/config_keys.py's and `openTelemetry:`
exporter/otlp/settings.py's). A key listed
under `ignored` means something to jmx_exporter but not to the sidecar: the file loads, with a
warning that says why. Any other unknown key is a warning too, which `check-config` refuses.
"""
from __future__ import annotations

from kafka_jmx_sidecar.exporter.base.definitions import (FLAG, RESTART, Block, Key, choice, custom, text, text_list)

_BLOCK = custom("a mapping (below)", lambda v: True, {"type": ["object", "null"]})
_PATTERNS = text_list("a list of ObjectName patterns")
_ATTRIBUTES = custom("a mapping of ObjectNames to lists of attribute names", lambda v: True,
                     {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}})
_STORE = custom("a file path, or {filename, password, type}", lambda v: True, {"oneOf": [
    {"type": "string"},
    {"type": "object", "additionalProperties": False,
     "properties": {"filename": {"type": "string"}, "password": {"type": "string"}, "type": {"type": "string"}}}]})
_LIST = custom("a list, or names separated by commas", lambda v: True,
               {"type": ["string", "array"], "items": {"type": "string"}})

SSL = Block(("ssl",), "SSL of the JMX connection (RMI registry and connector): the JVM's javax.net.ssl settings.",
            keys=(
    Key("trustStore", _STORE, "The trust store holding the broker's certificate (its CA)."),
    Key("trustStorePassword", text(), "Its password, with trustStore given as a path; ${NAME}: from the environment."),
    Key("keyStore", _STORE, "A key store with the sidecar's client certificate (the broker asks for one)."),
    Key("keyStorePassword", text(), "Its password, with keyStore given as a path; ${NAME}: from the environment."),
    Key("protocols", _LIST, "The TLS protocols allowed (Java names, such as TLSv1.3)."),
    Key("ciphers", _LIST, "The cipher suites allowed (Java names)."),
), reload=RESTART, example="""\
hostPort: kafka-0.kafka:9999
ssl:
  trustStore: /etc/jmx/truststore.p12
  trustStorePassword: ${TRUSTSTORE_PASSWORD}
""")
RULE = Block(("rules", 0), "One rule: MBeans whose `domain<key=value, ...><attribute path>attribute` "
             "matches `pattern` become the series it names; the first matching rule wins.", keys=(
    Key("pattern", text("a Java regular expression"), "What the rule matches; without it, every MBean."),
    Key("name", text(), "The metric name, with $1.. for the pattern's groups; without it, the default name."),
    Key("value", custom("a number or a template", lambda v: True, {"type": ["string", "number", "boolean"]}),
        "A fixed value, or $1.. from the pattern, instead of the attribute's."),
    Key("valueFactor", custom("a number", lambda v: True, {"type": ["number", "string"]}),
        "The value is multiplied by it (jmx_exporter 0.x takes 1.0 for what is not a number, 1.x refuses it).",
        default=1.0),
    Key("help", text(), "The metric's HELP text; by default the attribute's description and the MBean."),
    Key("labels", custom("a mapping of label names to values", lambda v: True,
                         {"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}}),
        "Labels of the series, names and values with $1.. from the pattern (needs name)."),
    Key("type", choice("GAUGE", "COUNTER", "UNTYPED", "UNKNOWN"), "The metric type.", default="UNTYPED"),
    Key("attrNameSnakeCase", FLAG, "The attribute's name in snake_case in default names.", default=False),
    Key("cache", FLAG, "Remember which rule an MBean's attribute matched.", default=False),
))
CUSTOMIZER = Block(("metricCustomizers", 0), "For the MBeans of a domain (and key properties): the first customizer "
                   "that matches an MBean applies.", example="""\
hostPort: kafka-0.kafka:9999
metricCustomizers:
  - mbeanFilter: {domain: kafka.server, properties: {type: app-info}}
    attributesAsLabels: [version, commit-id]
""", keys=(
    Key("mbeanFilter", custom("{domain, properties}", lambda v: True, {
        "type": "object", "required": ["domain"], "additionalProperties": False,
        "properties": {"domain": {"type": "string"}, "properties": {"type": "object"}}}),
        "Which MBeans: their domain, and key properties they all have.", required=True),
    Key("attributesAsLabels", text_list("a list of attribute names"), "These attributes' values as labels on "
        "every sample of the MBean."),
    Key("extraMetrics", custom("a list of {name, value, description}", lambda v: True, {
        "type": "array", "items": {"type": "object", "required": ["name", "value"], "additionalProperties": False,
                                   "properties": {"name": {"type": "string"}, "value": {},
                                                  "description": {"type": "string"}}}}),
        "Constant metrics of the MBean, through the rules like its attributes."),
))
JMX_EXPORTER = Block((), "jmx_exporter's keys: the broker to read, what to read, and the rules.", keys=(
    Key("hostPort", text("HOST:PORT"), "The broker's remote JMX port (or jmxUrl)."),
    Key("jmxUrl", text("a JMX service URL"), "service:jmx:rmi:///jndi/rmi://HOST:PORT/jmxrmi, instead of hostPort."),
    Key("username", text(), "JMX user; ${NAME}: from the environment."),
    Key("password", text(), "JMX password; ${NAME}: from the environment (never written in the file)."),
    Key("ssl", custom("true or false, or a mapping", lambda v: True, {"oneOf": [{"type": "boolean"}, SSL.schema()]}),
        "SSL of the JMX connection; a mapping gives its stores, protocols and ciphers. `ssl: true/false` applies "
        "at once; the stores, protocols and ciphers (JVM-wide) at a restart.", default=False, reload=RESTART),
    Key("startDelaySeconds", custom("a whole number of seconds", lambda v: True, {"type": "integer"}),
        "Seconds before the first poll.", default=0, reload=RESTART),
    Key("lowercaseOutputName", FLAG, "Lowercase the metric names.", default=False),
    Key("lowercaseOutputLabelNames", FLAG, "Lowercase the label names.", default=False),
    Key("includeObjectNames", _PATTERNS, "Only the MBeans matching one of these patterns are read.",
        default_doc="every MBean"),
    Key("excludeObjectNames", _PATTERNS, "MBeans matching one of these are not read (wins over include)."),
    Key("whitelistObjectNames", _PATTERNS, "Old name of includeObjectNames (ignored when both are set)."),
    Key("blacklistObjectNames", _PATTERNS, "Old name of excludeObjectNames (ignored when both are set)."),
    Key("includeObjectNameAttributes", _ATTRIBUTES, "Per exact ObjectName, the only attributes read "
        "(ignored with naming 0.x).", since="1.x"),
    Key("excludeObjectNameAttributes", _ATTRIBUTES, "Per exact ObjectName, attributes not read."),
    Key("autoExcludeObjectNameAttributes", FLAG, "Attributes that cannot be read are not asked for again.",
        default=True),
    Key("inferCounterTypeFromName", FLAG, "Untyped metrics whose name ends in _total become counters.",
        default=False),
    Key("metricCustomizers", custom("a list of customizers", lambda v: True,
                                    {"type": "array", "items": CUSTOMIZER.schema()}),
        "Attribute values as labels, and extra constant metrics, for some MBeans.",
        since="1.x"),
    Key("rules", custom("a list of rules", lambda v: True, {"type": "array", "items": RULE.schema()}),
        "How MBeans become series; without rules, jmx_exporter's default names for every attribute.",
        default_doc="one rule that names every attribute by default"),
    Key("httpServer", _BLOCK, "TLS and basic auth of /metrics in jmx_exporter's format (see httpServer below).",
        reload=RESTART, since="1.x"),
    Key("openTelemetry", _BLOCK, "Push the series /metrics serves to an OTLP receiver, as jmx_exporter 1.x "
        "(see openTelemetry below).", reload=RESTART, since="1.x"),
    Key("sidecar", _BLOCK, "The sidecar's own settings (see sidecar below)."),
), ignored={
    "excludeJvmMetrics": "there is no JVM of our own to exclude",
    "excludeBeanAttributeNames": "use excludeObjectNameAttributes",
}, example="""\
hostPort: kafka-0.kafka:9999
lowercaseOutputName: true
includeObjectNames: ["kafka.server:type=ReplicaManager,*"]
rules:
  - pattern: kafka.server<type=(.+), name=(.+)><>Value
    name: kafka_server_$1_$2
    type: GAUGE
""")
