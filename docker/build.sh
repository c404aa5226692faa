#!/usr/bin/env bash
# Builds the project's four images: cm-redis, cm-kafka, cm-app and cm-prometheus
# (docker/*.Dockerfile).
#
#   docker/build.sh            with BASE_IMAGE (default: cm-base:bookworm when it exists,
#                              as docker/engine.sh base makes it, else debian:bookworm-slim)
#                              and CM_IMAGE_VERSION (docker/release.sh sets it), a tag
#                              each image gets beside `latest`
#
# Wheels and jars are staged on the host (no HTTPS is needed inside a build): the project
# and every dependency as wheels (pip wheel, from PyPI or pip's cache), the Kafka broker's
# and Spark's connector jars from `collection-manager setup`'s cache. Docker's layer cache
# makes an unchanged rebuild take seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

[[ -x .venv/bin/collection-manager ]] || make setup >/dev/null
CACHE="${CM_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/collection-manager}"
.venv/bin/collection-manager setup >/dev/null
if [[ -z ${BASE_IMAGE:-} ]]; then
  if docker image inspect cm-base:bookworm >/dev/null 2>&1; then
    BASE_IMAGE=cm-base:bookworm
  else
    BASE_IMAGE=debian:bookworm-slim
  fi
fi

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
build() { # image, Dockerfile, context, more docker build arguments
  # (The legacy builder of Debian's docker.io warns that it is deprecated on every build.)
  docker build -q --force-rm --network host --build-arg "BASE_IMAGE=$BASE_IMAGE" -t "$1:latest" ${CM_IMAGE_VERSION:+-t "$1:$CM_IMAGE_VERSION"} -f "$2" "${@:4}" "$3" \
    2> >(grep -v -e DEPRECATED -e buildx -e '^ *$' >&2) >/dev/null
  echo "built $1 (from $BASE_IMAGE)"
}

build cm-redis docker/redis.Dockerfile docker
build cm-prometheus docker/prometheus.Dockerfile docker/prometheus

version() { .venv/bin/python -c "from collection_manager.config import $1; print($1)"; }
KAFKA_VERSION="$(version KAFKA_VERSION)"
SPARK_VERSION="$(version SPARK_VERSION)"

mkdir -p "$STAGE/kafka/libs"
# This version's jars only: the cache keeps those of earlier versions too.
cp "$CACHE/kafka-$KAFKA_VERSION"/*.jar "$STAGE/kafka/libs/"
cp docker/kafka-entrypoint.sh "$STAGE/kafka/"
build cm-kafka docker/kafka.Dockerfile "$STAGE/kafka"

mkdir -p "$STAGE/app/wheels/deps" "$STAGE/app/wheels/project" "$STAGE/src"
# The wheel is built from a copy: building in the checkout would leave build/ behind.
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$STAGE/src"
# [all]: the one app image runs every role, the consumer's too. async-timeout: redis needs
# it on Debian's Python 3.11.2 (< 3.11.3), not on newer ones.
.venv/bin/pip wheel -q --disable-pip-version-check --wheel-dir "$STAGE/app/wheels/deps" "$STAGE/src[all]" async-timeout
# The project's wheel apart (its own image layer, after the dependencies').
mv "$STAGE"/app/wheels/deps/collection_manager-*.whl "$STAGE/app/wheels/project/"
cp -r "$CACHE/spark-kafka-$SPARK_VERSION" "$STAGE/app/jars"
build cm-app docker/app.Dockerfile "$STAGE/app" --build-arg "SPARK_VERSION=$SPARK_VERSION"
