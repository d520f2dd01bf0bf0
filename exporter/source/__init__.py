"""Stage 1, the poll sources: what one poll reads, as MBeans and partition facts.

    protocol.py   what a poll source returns (ReadResult, BrokerReadings) and SourceError
    broker.py     JmxSource: one broker's MBeans over JMX (`sidecar.mode: broker`)
    cluster.py    ClusterSource: every partition of a cluster from the Admin API (`sidecar.mode: cluster`)
    jmx/          the read-only JMX client (JPype) and its Java helper
    admin/        the Kafka Admin API client and what it tells (min ISR, reassignments, sizes)

May import: base, rule_engine (the rule file says what to read), mbeans.
"""
