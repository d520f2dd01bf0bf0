"""The HTTP endpoint: `/metrics`, `/-/healthy`, `/-/ready`, with TLS and basic auth.

    server.py             MetricsServer: sockets, threads, HTTP/1.1 framing (h11)
    endpoints.py          a request -> an answer (pure)
    web_config.py         the Prometheus web-config file: TLS and basic auth
    web_config_reload.py  the web-config file re-read when it or a file it names changes
    server_block.py       jmx_exporter 1.x's `httpServer:` block -> the same WebConfig
    key_store.py          Java key stores -> PEM, through keytool

May import: base, config, poll (the collector it serves), output.
"""
