#!/bin/sh
# Writes the broker's configuration from the environment (host networking: loopback only,
# ports from KAFKA_PORT and KAFKA_CONTROLLER_PORT), then formats or runs the broker.
set -eu
home=/opt/kafka
cat >"$home/config/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:${KAFKA_CONTROLLER_PORT}
listeners=PLAINTEXT://127.0.0.1:${KAFKA_PORT},CONTROLLER://127.0.0.1:${KAFKA_CONTROLLER_PORT}
advertised.listeners=PLAINTEXT://127.0.0.1:${KAFKA_PORT}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
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
  format) exec java -cp "$cp" kafka.tools.StorageTool format -t "$KAFKA_CLUSTER_ID" -c "$home/config/server.properties" ;;
  run) exec java "-Xmx$KAFKA_HEAP" -cp "$cp" kafka.Kafka "$home/config/server.properties" ;;
  *) exec "$@" ;;
esac
