"""The Kafka Admin API source (the `admin` extra, kafka-python): partition states, min ISR,
reassignments, throttles and log-dir sizes as plain values, with what is unknown and why.

    settings.py    AdminSettings (bootstrap servers, TLS, SASL, timeouts) and the proposed keys
    connection.py  the settings as kafka-python's options (passwords masked in its logs)
    source.py      AdminSource.read() -> AdminView: the requests, batched (the I/O edge)
    convert.py     kafka-python's answers as view values (pure)
    view.py        AdminView and its parts; Unknown, Reason, Input
    fallback.py    what is used where an input is unknown (MinIsrResolver)
    errors.py      failures as Reasons; AdminError for a read that cannot go on
"""
