"""What the harness asks the ZooKeeper of a ZooKeeper-mode Kafka cluster, over its four-letter
command port (the server is started with `dump` allowed; ZooKeeper 3.4 allows every command)."""
from __future__ import annotations

import re
import socket

# the system property that lets a ZooKeeper 3.5+ server answer `dump` (3.4 ignores it)
FOUR_LETTER_WORDS = "-Dzookeeper.4lw.commands.whitelist=dump,srvr"
_SESSION = re.compile(r"(?m)^0x[0-9a-fA-F]+:\s*$")


def controller(port: int) -> int | None:
    """The active controller's broker id: the broker whose session owns the /controller node
    (`dump` lists each session's ephemeral nodes). None while no broker holds it."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"dump")
            text = b"".join(iter(lambda: s.recv(65536), b"")).decode("utf-8", "replace")
    except OSError:
        return None
    return controller_in_dump(text)


def controller_in_dump(text: str) -> int | None:
    for session in _SESSION.split(text.partition("Sessions with Ephemerals")[2])[1:]:
        nodes = {line.strip() for line in session.splitlines()}
        if "/controller" in nodes:
            ids = [int(n.rsplit("/", 1)[1]) for n in nodes if re.fullmatch(r"/brokers/ids/\d+", n)]
            return ids[0] if len(ids) == 1 else None
    return None
