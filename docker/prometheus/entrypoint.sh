#!/bin/sh
# Writes prometheus.yml from the environment, then runs Prometheus on it.
#   CM_CONSUMER_TARGETS, CM_CONTROLLER_TARGETS, CM_AGENT_TARGETS: host:port lists, comma-separated
set -eu
quote() { # "a,b" -> "'a', 'b'"
  printf '%s' "$1" | sed "s/[^,][^,]*/'&'/g; s/,/, /g"
}
config=/etc/cm-prometheus/prometheus.yml
cat > "$config" <<YAML
global:
  scrape_interval: ${SCRAPE_INTERVAL:-5s}
  evaluation_interval: ${SCRAPE_INTERVAL:-5s}
rule_files:
  - /etc/cm-prometheus/alerts.yml
scrape_configs:
  - job_name: cm-consumer
    static_configs: [{targets: [$(quote "${CM_CONSUMER_TARGETS:-}")]}]
  - job_name: cm-controller
    static_configs: [{targets: [$(quote "${CM_CONTROLLER_TARGETS:-}")]}]
  - job_name: cm-agent
    static_configs: [{targets: [$(quote "${CM_AGENT_TARGETS:-}")]}]
YAML
exec prometheus --config.file="$config" --storage.tsdb.path=/prometheus \
  --web.listen-address="${PROMETHEUS_BIND:-127.0.0.1}:${PROMETHEUS_PORT}"
