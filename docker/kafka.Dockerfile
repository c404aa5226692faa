# A single-node KRaft Kafka broker. The build context holds the broker's classpath as
# `collection-manager setup` resolves it (docker/build.sh stages it) and kafka-entrypoint.sh.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --home /opt/kafka kafka
COPY libs/ /opt/kafka/libs/
COPY kafka-entrypoint.sh /opt/kafka/entrypoint.sh
# Storage is formatted now, with a fixed cluster id, so a container is ready in seconds;
# the listeners' ports are only written when it starts (the formatted data names none).
# C1 only, as the local broker (CM_KAFKA_JAVA_OPTIONS): it starts in less time and CPU.
ENV KAFKA_CLUSTER_ID=Y29sbGVjdGlvbi1tZ3IwMQ KAFKA_PORT=9092 KAFKA_CONTROLLER_PORT=9093 KAFKA_HEAP=512m \
    KAFKA_JAVA_OPTIONS=-XX:TieredStopAtLevel=1
RUN mkdir -p /opt/kafka/data /opt/kafka/config && chown -R kafka /opt/kafka \
 && chmod +x /opt/kafka/entrypoint.sh
USER kafka
RUN /opt/kafka/entrypoint.sh format
HEALTHCHECK --interval=2s --timeout=2s --retries=60 \
  CMD bash -c 'exec 3<>/dev/tcp/127.0.0.1/$KAFKA_PORT'
ENTRYPOINT ["/opt/kafka/entrypoint.sh"]
CMD ["run"]
