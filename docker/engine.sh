#!/usr/bin/env bash
# A Docker engine for this project on a machine that has none set up (run as root).
#
#   docker/engine.sh install   Debian's docker.io, docker-compose and debootstrap (apt-get)
#   docker/engine.sh up        dockerd with its data, socket and pid file under the state dir
#   docker/engine.sh base      the local Debian base image (debootstrap + docker import)
#   docker/engine.sh status    whether it runs; then DOCKER_HOST to use it
#   docker/engine.sh down      stops the dockerd this script started (by its pid file)
#
# Why this shape: there is no image registry here, so the base image is made from the same
# Debian mirror apt uses. iptables and the default bridge are off (nothing may listen on or
# route to anything but loopback), so every container runs on the host network with its
# own loopback port. Each step is skipped when its result is already there. Users who have
# Docker skip all of this and set DOCKER_HOST as usual.
set -euo pipefail

STATE="${CM_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/collection-manager}/docker"
SOCKET="$STATE/docker.sock"
PIDFILE="$STATE/dockerd.pid"
BASE_IMAGE="${CM_BASE_IMAGE:-cm-base:bookworm}"
export DOCKER_HOST="unix://$SOCKET"

die() { echo "engine: $*" >&2; exit 1; }

running() { [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

install() {
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v docker-compose >/dev/null || missing+=(docker-compose)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  ((${#missing[@]})) || return 0
  ((EUID == 0)) || die "missing ${missing[*]}: install them (apt-get install ${missing[*]}) or run this as root"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

up() {
  running && return 0
  ((EUID == 0)) || die "dockerd needs root here; or point DOCKER_HOST at an engine you have"
  command -v dockerd >/dev/null || die "no dockerd: run '$0 install' first"
  mkdir -p "$STATE/data" "$STATE/exec"
  # setsid: a Ctrl-C in this terminal must not kill the engine mid-write; 'down' stops it.
  setsid dockerd --data-root "$STATE/data" --exec-root "$STATE/exec" --pidfile "$PIDFILE" \
    --host "unix://$SOCKET" --iptables=false --ip6tables=false --bridge=none \
    >>"$STATE/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 100); do
    docker version >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  die "dockerd did not answer within 20 s; see $STATE/dockerd.log"
}

base() {
  docker image inspect "$BASE_IMAGE" >/dev/null 2>&1 && return 0
  local mirror root
  mirror="$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)"
  mirror="${mirror:-http://deb.debian.org/debian}"
  root="$(mktemp -d "$STATE/base.XXXXXX")"
  trap 'rm -rf "$root"' RETURN
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$STATE/debootstrap.log" 2>&1 ||
    die "debootstrap failed; see $STATE/debootstrap.log"
  tar -C "$root" -c . | docker import - "$BASE_IMAGE" >/dev/null
}

down() {
  if running; then
    local pid
    pid="$(cat "$PIDFILE")"
    kill "$pid"
    for _ in $(seq 150); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -0 "$pid" 2>/dev/null && die "dockerd (pid $pid) did not stop within 30 s"
  fi
  rm -f "$PIDFILE"
  # dockerd leaves its network namespace bind-mounted under the exec root when it stops.
  local mount
  for mount in "$STATE"/exec/netns/*; do
    if mountpoint -q "$mount"; then umount "$mount"; fi
  done
}

status() {
  if running; then
    echo "dockerd running (pid $(cat "$PIDFILE")); export DOCKER_HOST=$DOCKER_HOST"
  else
    echo "dockerd not running (state in $STATE)"
  fi
}

mkdir -p "$STATE"
case "${1:-}" in
  install | up | base | down | status) "$1" ;;
  *) die "usage: $0 install|up|base|status|down" ;;
esac
