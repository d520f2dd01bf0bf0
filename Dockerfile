# syntax=docker/dockerfile:1
# Two images (README, "The image"):
#   docker build -t ghcr.io/kafka-jmx-sidecar/kafka-jmx-sidecar:0.1.0 .
#   docker build --target backfill -t ghcr.io/kafka-jmx-sidecar/kafka-jmx-sidecar-backfill:0.1.0 .
# Every install step is a script in scripts/image/ that tests/deploy/docker also runs, outside a
# container (none runs where the tests run): change the scripts, not inline commands.

# Debian 12 with CPython 3.11: Debian's OpenJDK 17 is the JVM the sidecar is tested with.
FROM python:3.11-slim-bookworm AS base

# --- build: the wheel, and the JMX helper compiled with a JDK -------------------------------------
FROM base AS build
# 17.*: the major version the compiled helper is keyed to; minor versions take security updates.
# The man directory: the JDK's postinst registers man pages the slim image does not have.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jdk-headless=17.* \
 && rm -rf /var/lib/apt/lists/*
ENV PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY scripts/image/ scripts/image/
COPY mbeans/ mbeans/
COPY exporter/ exporter/
COPY rules/ rules/
COPY kafka_jmx_sidecar/ kafka_jmx_sidecar/
RUN scripts/image/build-wheel /dist

FROM build AS sidecar-venv
# web: TLS and basic auth on /metrics; admin: the Kafka Admin API source and cluster mode; otlp: the
# push of an openTelemetry: block. Every package at the version scripts/image/constraints.txt pins
# (`make constraints` renews the pins).
RUN scripts/image/install /opt/kafka-jmx-sidecar /dist web,admin,otlp scripts/image/constraints.txt \
 && scripts/image/compile-helper /opt/kafka-jmx-sidecar /opt/kafka-jmx-sidecar/jmx-helper

FROM build AS backfill-venv
RUN scripts/image/install /opt/kafka-jmx-sidecar /dist web,admin,spark scripts/image/constraints.txt

# --- runtime: a JRE, a numeric non-root user, nothing writable but the volumes ----------------------
FROM base AS runtime
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="kafka-jmx-sidecar" \
      org.opencontainers.image.description="Prometheus sidecar for Apache Kafka: fast JMX scrape, jmx_exporter rules, recomputed partition health" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="https://github.com/kafka-jmx-sidecar/kafka-jmx-sidecar" \
      org.opencontainers.image.licenses="Apache-2.0"
# /opt/java: one JAVA_HOME whatever the architecture's directory name under /usr/lib/jvm.
# /var/lib/kafka-jmx-sidecar: owned by the user so a volume mounted there starts writable, and by
# group 0 with the same rights: OpenShift runs the image as an arbitrary uid in group 0.
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless=17.* \
 && rm -rf /var/lib/apt/lists/* \
 && ln -s "$(dirname "$(dirname "$(readlink -f /usr/bin/java)")")" /opt/java \
 && groupadd --gid 10001 kafka-jmx-sidecar \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin kafka-jmx-sidecar \
 && install -d -o 10001 -g 0 -m 0770 /var/lib/kafka-jmx-sidecar \
 && install -d -m 0755 /etc/kafka-jmx-sidecar /etc/kafka-jmx-sidecar/web /etc/kafka-jmx-sidecar/secrets
# HOME is never written (it does not exist); the JMX helper comes compiled (compile-helper).
ENV JAVA_HOME=/opt/java \
    PATH=/opt/kafka-jmx-sidecar/bin:$PATH \
    HOME=/nonexistent \
    KAFKA_JMX_SIDECAR_CACHE=/opt/kafka-jmx-sidecar/jmx-helper \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
USER 10001:10001
VOLUME ["/tmp", "/var/lib/kafka-jmx-sidecar"]
EXPOSE 9404

# --- backfill: the Spark job (docker build --target backfill) ----------------------------------------
FROM runtime AS backfill
LABEL org.opencontainers.image.title="kafka-jmx-sidecar-backfill" \
      org.opencontainers.image.description="kafka-jmx-sidecar's PySpark backfill: archives and describe dumps to OpenMetrics for promtool"
COPY --from=backfill-venv /opt/kafka-jmx-sidecar /opt/kafka-jmx-sidecar
ENTRYPOINT ["kafka-jmx-sidecar", "backfill"]
CMD ["--help"]

# --- sidecar: the default target, last so that a plain `docker build .` makes it -------------------
FROM runtime AS sidecar
COPY --from=sidecar-venv /opt/kafka-jmx-sidecar /opt/kafka-jmx-sidecar
ENTRYPOINT ["kafka-jmx-sidecar", "serve"]
CMD ["--config", "/etc/kafka-jmx-sidecar/config.yml"]
