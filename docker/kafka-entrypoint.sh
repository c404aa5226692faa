#!/bin/sh
# Writes the broker's configuration from the environment, then formats or runs the broker.
#
# Host networking (the default): it listens on 127.0.0.1 at KAFKA_PORT and advertises that.
# A bridge network (docker-compose.ports.yml): KAFKA_BIND=0.0.0.0 inside the container's own
# network, KAFKA_ADVERTISED_HOST the name other containers reach it by, and KAFKA_HOST_PORT a
# second listener, advertised as 127.0.0.1, for clients on the host through a published port.
# The controller listener never leaves the container's loopback.
#
# One of several brokers (docker-compose.yml's `replicated` profile): KAFKA_NODE_ID, the
# quorum KAFKA_VOTERS (id@127.0.0.1:port,...), and KAFKA_REPLICATION_FACTOR and
# KAFKA_MIN_INSYNC_REPLICAS for every topic, Kafka's own included. The image's storage is
# formatted as node 1; another node formats its own once, with the same cluster id.
set -eu
home=/opt/kafka
node="${KAFKA_NODE_ID:-1}"
voters="${KAFKA_VOTERS:-$node@127.0.0.1:$KAFKA_CONTROLLER_PORT}"
factor="${KAFKA_REPLICATION_FACTOR:-1}"
isr="${KAFKA_MIN_INSYNC_REPLICAS:-1}"
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
node.id=$node
controller.quorum.voters=$voters
listeners=$listeners
advertised.listeners=$advertised
controller.listener.names=CONTROLLER
listener.security.protocol.map=$protocols
inter.broker.listener.name=PLAINTEXT
log.dirs=$home/data
num.partitions=4
default.replication.factor=$factor
min.insync.replicas=$isr
unclean.leader.election.enable=false
offsets.topic.replication.factor=$factor
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=$factor
transaction.state.log.min.isr=$isr
share.coordinator.state.topic.replication.factor=$factor
share.coordinator.state.topic.min.isr=$isr
group.initial.rebalance.delay.ms=0
PROPS
cp="$home/libs/*"
format() {
  java $KAFKA_JAVA_OPTIONS -cp "$cp" kafka.tools.StorageTool format -t "$KAFKA_CLUSTER_ID" -c "$home/config/server.properties"
}
case "${1:-run}" in
  format) format ;;
  run)
    # Storage of another node (the image's, node 1) is no storage of this one.
    if ! grep -qx "node.id=$node" "$home/data/meta.properties" 2>/dev/null; then
      find "$home/data" -mindepth 1 -delete
      format >/dev/null
    fi
    exec java "-Xmx$KAFKA_HEAP" $KAFKA_JAVA_OPTIONS -cp "$cp" kafka.Kafka "$home/config/server.properties" ;;
  *) exec "$@" ;;
esac
