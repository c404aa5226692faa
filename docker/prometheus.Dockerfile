# Prometheus for the compose pipeline: Debian's package, the project's alert rules, and a
# configuration written at start from the targets in the environment (entrypoint.sh).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /prometheus /etc/cm-prometheus && chown prometheus /prometheus /etc/cm-prometheus
COPY alerts.yml entrypoint.sh /etc/cm-prometheus/
USER prometheus
WORKDIR /prometheus
# Host networking: it listens on loopback only (PROMETHEUS_BIND), on PROMETHEUS_PORT.
ENV PROMETHEUS_PORT=9090
HEALTHCHECK --interval=2s --timeout=2s --retries=30 \
  CMD ["sh", "-c", "exec 3<>/dev/tcp/127.0.0.1/$PROMETHEUS_PORT"]
ENTRYPOINT ["sh", "/etc/cm-prometheus/entrypoint.sh"]
