"""Whether the broker's RMI registry answers again: a cheap look, between reconnect attempts, that
lets the connection come back within a poll of the broker answering, however long the backoff
after a long outage has grown (connections.py).

Without SSL it is the start of Java RMI's own handshake (JRMP: the client sends the magic `JRMI`,
protocol version 2 and the stream protocol; the registry acknowledges with 0x4E); with SSL (the
registry behind SSL too, as `ssl: true` means here) a TLS handshake, certificates unchecked:
nothing is sent either way. A broker that is down refuses the TCP connection; a frozen one (a
stopped JVM, a long GC pause) accepts it and says nothing, which the probe tells apart by its
timeout instead of taking it for a broker that is back.
"""
from __future__ import annotations

import socket
import ssl
import time

_JRMP_HEADER = b"JRMI\x00\x02\x4b"  # magic, version 2, StreamProtocol
_PROTOCOL_ACK = 0x4E


def answers(endpoint: str, use_ssl: bool, timeout: float) -> bool | None:
    """True when the registry at `endpoint` (host:port) answers within `timeout` seconds, False
    when it does not; None when the endpoint is not host:port (nothing to probe)."""
    host, sep, port = endpoint.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    host = host.strip("[]")
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as sock:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            if use_ssl:
                return _tls_answers(sock, host)
            sock.sendall(_JRMP_HEADER)
            return sock.recv(1)[:1] == bytes([_PROTOCOL_ACK])
    except OSError:  # refused, unreachable, or no answer in time
        return False


def _tls_answers(sock: socket.socket, host: str) -> bool:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # a probe: whose certificate it is is the connection's business
    try:
        context.wrap_socket(sock, server_hostname=host).close()
        return True
    except TimeoutError:
        return False
    except ssl.SSLError:  # a TLS alert (a client certificate asked for, no shared protocol): an answer
        return True
