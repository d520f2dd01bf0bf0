"""What the tests and the benchmarks share: the real programs (Kafka brokers and jmx_exporter
releases resolved from Maven by `programs`, run by `kafka` and `jmx_exporter`, as child processes
of `processes`), the sidecar run as its users run it (`sidecar`), the bare JMX test JVM
(`jmx_target`), the simulator's Admin API over Kafka's wire (`admin_wire`) and the comparison of
two expositions (`compare`).

For tests/ and bench/ only: it is not installed with kafka-jmx-sidecar. Both import it from the
repository root (`python -m pytest`, `python -m bench.NAME`).
"""
