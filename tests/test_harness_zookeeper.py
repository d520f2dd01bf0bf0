"""Reading the active controller from ZooKeeper's `dump` (harness/zookeeper.py)."""
from harness.zookeeper import controller_in_dump

# as a ZooKeeper 3.5 server of a Kafka 2.4 cluster printed it
DUMP = """SessionTracker dump:
Session Sets (2)/(2):
0 expire at Sun Nov 29 10:46:59 UTC 2026:
2 expire at Sun Nov 29 10:47:02 UTC 2026:
\t0x10001c343360000
\t0x10001c343360001
ephemeral nodes dump:
Sessions with Ephemerals (2):
0x10001c343360001:
\t/brokers/ids/2
0x10001c343360000:
\t/controller
\t/brokers/ids/1
Connections dump:
Connections Sets (1)/(3):
3 expire at Sun Nov 29 10:47:06 UTC 2026:
\tip: /127.0.0.1:55560 sessionId: 0x0
"""


def test_the_controller_is_the_broker_whose_session_owns_the_controller_node():
    assert controller_in_dump(DUMP) == 1
    assert controller_in_dump(DUMP.replace("\t/controller\n", "").replace("\t/brokers/ids/2\n", "\t/brokers/ids/2\n\t/controller\n")) == 2


def test_no_controller_while_no_session_owns_the_node():
    assert controller_in_dump(DUMP.replace("\t/controller\n", "")) is None
    assert controller_in_dump("") is None
