#!/bin/sh
# Writes the broker's configuration from the environment, then formats or runs the broker.
#
# Host networking (the default): it listens on 127.0.0.1 at KAFKA_PORT and advertises that.
# A bridge network (docker-compose.ports.yml): KAFKA_BIND=0.0.0.0 inside the container's own
# network, KAFKA_ADVERTISED_HOST the name other containers reach it by, and KAFKA_HOST_PORT a
# second listener, advertised as 127.0.0.1, for clients on the host through a published port.
# The controller listener never leaves the container's loopback.
set -eu
home=/opt/kafka
bind="${KAFKA_BIND:-127.0.0.1}"
listeners="PLAINTEXT://$bind:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT"
advertised="PLAINTEXT://${KAFKA_ADVERTISED_HOST:-127.0.0.1}:$KAFKA_PORT"
protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
if [ -n "${KAFKA_HOST_PORT:-}" ]; then
  listeners="$listeners,HOST://$bind:$KAFKA_HOST_PORT"
  advertised="$advertised,HOST://127.0.0.1:$KAFKA_HOST_PORT"
  protocols="$protocols,HOST:PLAINTEXT"
fi
cat >"$home/config/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:${KAFKA_CONTROLLER_PORT}
listeners=$listeners
advertised.listeners=$advertised
controller.listener.names=CONTROLLER
listener.security.protocol.map=$protocols
inter.broker.listener.name=PLAINTEXT
log.dirs=$home/data
num.partitions=4
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
PROPS
cp="$home/libs/*"
case "${1:-run}" in
  format) exec java $KAFKA_JAVA_OPTIONS -cp "$cp" kafka.tools.StorageTool format -t "$KAFKA_CLUSTER_ID" -c "$home/config/server.properties" ;;
  run) exec java "-Xmx$KAFKA_HEAP" $KAFKA_JAVA_OPTIONS -cp "$cp" kafka.Kafka "$home/config/server.properties" ;;
  *) exec "$@" ;;
esac
