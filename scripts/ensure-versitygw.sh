#!/usr/bin/env bash
# Builds the versitygw S3 server the S3 blob store's tests run against, if
# (and only if) the cached binary is missing, and prints its path.
#
#   scripts/ensure-versitygw.sh        # prints e.g. /var/cache/doppel/bin/versitygw-v1.8.0
#
# versitygw (Apache-2.0, github.com/versity/versitygw) is built from the Go
# module proxy with `go install` at a pinned version (a few minutes on two
# cores), into $DOPPEL_TOOLS (default /var/cache/doppel/bin when writable,
# else ~/.cache/doppel/bin). Tests find it through $DOPPEL_VERSITYGW, then
# that directory, then PATH (internal/testutil/s3test).
set -euo pipefail

LOG_PREFIX=ensure-versitygw
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION=v1.8.0

if [ -n "${DOPPEL_TOOLS:-}" ]; then
	tools=$DOPPEL_TOOLS
elif mkdir -p /var/cache/doppel/bin 2>/dev/null && [ -w /var/cache/doppel/bin ]; then
	tools=/var/cache/doppel/bin
else
	tools=${XDG_CACHE_HOME:-${HOME:?HOME is not set}/.cache}/doppel/bin
fi
bin=$tools/versitygw-$VERSION

if [ ! -x "$bin" ]; then
	command -v go >/dev/null 2>&1 || die "the Go toolchain ('go') is not in PATH"
	mkdir -p "$tools"
	build=$(mktemp -d "${TMPDIR:-/tmp}/versitygw-build.XXXXXX")
	trap 'rm -rf "$build"' EXIT
	log "building versitygw $VERSION (a few minutes)"
	# Outside the repository, so doppel's go.mod is not involved.
	(cd "$build" && GOBIN="$build" GOFLAGS=-buildvcs=false \
		go install "github.com/versity/versitygw/cmd/versitygw@$VERSION") ||
		die "go install github.com/versity/versitygw/cmd/versitygw@$VERSION failed"
	mv "$build/versitygw" "$bin.tmp"
	mv "$bin.tmp" "$bin"
	ln -sfn "versitygw-$VERSION" "$tools/versitygw"
fi
printf '%s\n' "$bin"
