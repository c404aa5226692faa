#!/usr/bin/env bash
# Builds release X.Y.Z from its tag vX.Y.Z: the sdist and wheel in dist/ (checked by
# `twine check`), and, where a Docker engine answers, the images tagged X.Y.Z.
#
#   docker/release.sh            the version in pyproject.toml
#
# Built from `git archive` of the tag, never from the work tree: what is uncommitted stays
# out, and the build leaves nothing behind in the checkout but dist/. The build's copy gets
# collection_manager/COMMIT, so `--version` of the installed release names its commit.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION="$(.venv/bin/python -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"
TAG="v$VERSION"
if ! COMMIT="$(git rev-parse --verify -q "$TAG^{commit}")"; then
  echo "error: no tag $TAG: tag the release commit first (git tag -a $TAG -m 'Release $VERSION')" >&2
  exit 2
fi
if ! grep -q "^## $VERSION " CHANGELOG.md; then
  echo "error: CHANGELOG.md has no section '## $VERSION (date)'" >&2
  exit 2
fi

SRC="$(mktemp -d)"
trap 'rm -rf "$SRC"' EXIT
git archive "$TAG" | tar -x -C "$SRC"
git rev-parse --short=12 "$COMMIT" >"$SRC/collection_manager/COMMIT"
rm -rf "dist/$VERSION"
.venv/bin/python -m build --sdist --wheel --outdir "dist/$VERSION" "$SRC" >"$SRC/build.log" 2>&1 \
  || { cat "$SRC/build.log" >&2; exit 1; }
.venv/bin/twine check --strict "dist/$VERSION"/*
echo "built dist/$VERSION from $TAG (commit $(cat "$SRC/collection_manager/COMMIT"))"

if docker info >/dev/null 2>&1; then
  CM_IMAGE_VERSION="$VERSION" docker/build.sh
else
  echo "no Docker engine answers: images not built (docker/engine.sh starts one)"
fi
