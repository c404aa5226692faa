# The application: consumer, replica agents, controller and CLI are all `collection-manager`.
# The build context (docker/build.sh stages it) holds wheels/ (deps/: every dependency,
# project/: this project; built on the host: no network is needed inside the build) and
# jars/ (Spark's Kafka connector as `collection-manager setup` resolves it).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      python3 python3-venv openjdk-17-jre-headless procps \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --create-home --home-dir /home/cm cm
# Dependencies first, the project last: a change of the project's code then rebuilds one
# small layer instead of installing pyspark again.
COPY wheels/deps/ /tmp/wheels/
RUN python3 -m venv /opt/cm \
 && /opt/cm/bin/pip install -q --no-index --no-deps /tmp/wheels/*.whl \
 && rm -rf /tmp/wheels
COPY wheels/project/ /tmp/project/
RUN /opt/cm/bin/pip install -q --no-index --no-deps /tmp/project/*.whl \
 && /opt/cm/bin/pip check -q \
 && rm -rf /tmp/project
# The connector's folder name carries the Spark version (spark_consumers/session.py).
ARG SPARK_VERSION=4.2.0
COPY jars/ /home/cm/.cache/collection-manager/spark-kafka-${SPARK_VERSION}/
RUN mkdir -p /home/cm/state && chown -R cm /home/cm
USER cm
WORKDIR /home/cm
# Spark runs local[*] inside the container; its state (checkpoints, scratch) is kept here.
ENV PATH=/opt/cm/bin:$PATH CM_STATE_DIR=/home/cm/state
# The process' own /healthz when it serves one (CM_*_METRICS_ADDRESS); compose asks /readyz.
HEALTHCHECK --interval=5s --timeout=5s --retries=60 \
  CMD ["python", "-m", "collection_manager.observability.probe", "/healthz"]
ENTRYPOINT ["collection-manager"]
