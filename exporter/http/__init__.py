"""The HTTP endpoint: `/metrics`, `/-/healthy`, `/-/ready`, with TLS and basic auth.

    server.py             MetricsServer: the listening socket and the event loop's thread
    connection.py         one connection: TLS handshake, HTTP/1.1 through h11, the answer written
    shared.py             what the connections share: thread pools, work off the loop
    limits.py             Limits: connections, timeouts, sizes, threads; the open-files limit
    framing.py            the Server and Date headers, error answers written without h11
    endpoints.py          a request -> an answer (pure); Served, what it needs of the collector
    web_config.py         the Prometheus web-config file: TLS and basic auth
    basic_auth.py         the Authorization header, the users' hashes, the credentials already checked
    logins.py             password checks bounded (a flood cannot hold up scrapers), failed logins counted
    web_config_reload.py  the web-config file re-read when it or a file it names changes
    server_block.py       jmx_exporter 1.x's `httpServer:` block -> the same WebConfig
    key_store.py          Java key stores -> PEM, through keytool

May import: base, rule_engine, source, recompute, reassignment, output, archive; never config or
poll (the collector it serves is an endpoints.Served).
"""
