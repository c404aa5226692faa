# Redis for the pipeline. BASE_IMAGE: a Debian bookworm image (where there is no registry,
# the one docker/engine.sh base makes from the Debian mirror).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data && chown redis:redis /data
USER redis
WORKDIR /data
# Host networking: the port comes from the environment, and it listens on loopback only
# (a bridge network binds 0.0.0.0 inside the container's own network instead).
ENV REDIS_PORT=6379 REDIS_BIND=127.0.0.1
HEALTHCHECK --interval=2s --timeout=2s --retries=30 \
  CMD redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping | grep -q PONG
CMD ["sh", "-c", "exec redis-server --bind \"$REDIS_BIND\" --port \"$REDIS_PORT\" --dir /data --appendonly yes --save ''"]
