#!/usr/bin/env bash
# nbd-overwrite.sh: what a copy into a doppel nbd export costs, fresh and
# over data already there (every block replaced by new data, as a VM disk
# is written all day): wall time and the server's CPU seconds, optionally
# with the server's CPU profile.
#
#   bench/nbd-overwrite.sh [BINDIR]    (default bin/; several BINDIRs, in
#                                       turn per repetition, for an A/B)
#
# Per repetition and BINDIR: a fresh volume and a BENCH_MIB export of
# fixed 4 KiB blocks over TCP on loopback; nbdcopy --flush of one random
# image (fresh), then of another (over). Printed: each run, then medians.
#
# Environment: BENCH_REPS [2], BENCH_MIB [1024], BENCH_DIR
# [/var/tmp/doppel-bench-nbdover] (needs 3 x BENCH_MIB free), BENCH_PORT
# [10977], BENCH_PROFILE=DIR (DOPPEL_CPUPROFILE of each server, as
# DIR/REP-N.cpu). Needs nbdcopy and nbdinfo (scripts/ensure-deps.sh --bench).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
CMDLINE=$(bench_cmdline bench/nbd-overwrite.sh "$@")

[ $# -gt 0 ] || set -- "$DOPPEL_REPO_ROOT/bin"
REPS=${BENCH_REPS:-2}
MIB=${BENCH_MIB:-1024}
DIR=${BENCH_DIR:-/var/tmp/doppel-bench-nbdover}
PORT=${BENCH_PORT:-10977}
positive_ints "$REPS" "$MIB" "$PORT"
for tool in nbdcopy nbdinfo; do
	command -v "$tool" >/dev/null || die "$tool is missing: run scripts/ensure-deps.sh --bench"
done
for bin in "$@"; do
	[ -x "$bin/doppel" ] || die "$bin/doppel is missing: run make build"
done

mkdir -p "$DIR"
A=$DIR/image-a.bin B=$DIR/image-b.bin STORE=$DIR/store LOGF=$DIR/log
for img in "$A" "$B"; do
	if [ "$(stat -c %s "$img" 2>/dev/null || echo 0)" != $((MIB << 20)) ]; then
		log "writing $MIB MiB of random data to $img"
		head -c $((MIB << 20)) /dev/urandom >"$img"
	fi
done
SERVER_PID=""
stop_server() {
	if [ -n "$SERVER_PID" ]; then
		kill -INT "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
		SERVER_PID=""
	fi
}
trap stop_server EXIT

# copy_run IMAGE: prints "SECONDS CPU" of one nbdcopy into the export.
copy_run() {
	local t0 t1 c0 c1
	c0=$(proc_cpu "$SERVER_PID") t0=$(date +%s%N)
	nbdcopy --flush "$1" "nbd://127.0.0.1:$PORT/disk" 2>>"$LOGF"
	t1=$(date +%s%N) c1=$(proc_cpu "$SERVER_PID")
	printf '%s %s\n' "$(secs "$t0" "$t1")" "$(sub "$c0" "$c1")"
}

declare -A RES
bench_start
for rep in $(seq "$REPS"); do
	for i in $(seq $#); do
		bin=${!i}
		rm -rf "$STORE"
		"$bin/doppel" init --store "$STORE" >>"$LOGF" 2>&1
		prof=""
		if [ -n "${BENCH_PROFILE:-}" ]; then
			mkdir -p "$BENCH_PROFILE"
			prof=$BENCH_PROFILE/$rep-$i.cpu
		fi
		DOPPEL_CPUPROFILE=$prof "$bin/doppel" nbd --store "$STORE" --listen "tcp:127.0.0.1:$PORT" \
			--create "${MIB}M" --name disk /disk.img >>"$LOGF" 2>&1 &
		SERVER_PID=$!
		for _ in $(seq 100); do
			nbdinfo --size "nbd://127.0.0.1:$PORT/disk" >/dev/null 2>&1 && break
			sleep 0.1
		done
		read -r fs fc < <(copy_run "$A")
		read -r os oc < <(copy_run "$B")
		stop_server
		log "repetition $rep, $bin: fresh $fs s (server CPU $fc s), over $os s (server CPU $oc s)"
		RES[$i,fs]+="$fs " RES[$i,fc]+="$fc " RES[$i,os]+="$os " RES[$i,oc]+="$oc "
	done
done
rm -rf "$STORE"

echo
echo "| binaries | fresh copy | server CPU | copy over it | server CPU |"
echo "|---|---|---|---|---|"
for i in $(seq $#); do
	echo "| ${!i} | $(median "${RES[$i,fs]}") s | $(median "${RES[$i,fc]}") s | $(median "${RES[$i,os]}") s | $(median "${RES[$i,oc]}") s |"
done
echo
machine_section "$DIR" "$CMDLINE" "as root" "| Repetitions | $REPS, binaries in turn, medians |"
