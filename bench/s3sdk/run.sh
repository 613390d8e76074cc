#!/usr/bin/env bash
# Measures aws-sdk-go-v2 against minio-go/v7 (main.go) on a versitygw
# started here on loopback, serving a temporary directory; stops it after.
#
#   bench/s3sdk/run.sh [-rounds 5 -objects 32 -ranges 512 -par 4]
set -euo pipefail
LOG_PREFIX=s3sdk
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"

vgw=$("$DOPPEL_REPO_ROOT/scripts/ensure-versitygw.sh")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/s3sdk.XXXXXX")
pid=
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	[ -z "$pid" ] || wait "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/root"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret-key
ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
	"$vgw" --port "127.0.0.1:$port" --quiet posix ${S3SDK_POSIX_FLAGS:-} "$tmp/root" >"$tmp/vgw.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/vgw.log" >&2; die "versitygw exited"; }
	sleep 0.1
done
cd "$(dirname "${BASH_SOURCE[0]}")"
go build -o "$tmp/s3sdk" .
S3SDK_ENDPOINT=http://127.0.0.1:$port S3SDK_BUCKET=bench "$tmp/s3sdk" "$@"
