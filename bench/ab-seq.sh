#!/usr/bin/env bash
# ab-seq.sh: two doppel builds side by side on sequential I/O, alternating
# runs so that the machine's noise falls on both alike.
#
#   bench/ab-seq.sh OLD_BINDIR NEW_BINDIR
#
# Each BINDIR holds doppel and doppel-core (make build puts them in bin/;
# for an older commit: git worktree add /tmp/old COMMIT && make -C /tmp/old
# build). Per repetition and build, on a fresh volume: a sequential write
# of BENCH_SIZE_MIB of random data with dd (1 MiB writes, fsync at the
# end), then a remount with caches dropped and a cold read with cat.
# Printed per run: wall seconds, the daemon's CPU seconds, the whole
# machine's busy CPU seconds and how much the host's page cache grew
# during the write; then the medians.
#
# Environment: BENCH_REPS [5], BENCH_SIZE_MIB [1024], BENCH_INIT_OPTS (for
# `doppel init`, e.g. "--chunking fixed:4K"), BENCH_DIR
# [/var/tmp/doppel-ab-seq] (on the disk to measure; needs twice the size
# free). Needs root (it drops the caches).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

[ $# -eq 2 ] || die "usage: $0 OLD_BINDIR NEW_BINDIR"
REPS=${BENCH_REPS:-5}
SIZE_MIB=${BENCH_SIZE_MIB:-1024}
read -r -a INIT_OPTS <<<"${BENCH_INIT_OPTS:-}"
DIR=${BENCH_DIR:-/var/tmp/doppel-ab-seq}
positive_ints "$REPS" "$SIZE_MIB"
for b in "$@"; do
	if [ ! -x "$b/doppel" ] || [ ! -x "$b/doppel-core" ]; then
		die "$b has no doppel and doppel-core"
	fi
done
[ "$(id -u)" = 0 ] || die "run as root: the cold read drops the host's caches"

mkdir -p "$DIR"
SRC=$DIR/random.bin STORE=$DIR/store MNT=$DIR/mnt LOGF=$DIR/log
cleanup() { for b in "$@"; do doppel_down "$b/doppel" "$STORE" "$MNT" "$LOGF"; done; }
trap 'cleanup "$1" "$2"' EXIT
if [ "$(stat -c %s "$SRC" 2>/dev/null || echo 0)" != $((SIZE_MIB << 20)) ]; then
	log "writing $SIZE_MIB MiB of random data to $SRC"
	head -c $((SIZE_MIB << 20)) /dev/urandom >"$SRC"
fi

cached_kib() { awk '/^Cached:/{ print $2 }' /proc/meminfo; }

declare -A W R WC RC
for rep in $(seq "$REPS"); do
	for label in old new; do
		bin=$1
		[ $label = new ] && bin=$2
		rm -rf "$STORE"
		"$bin/doppel-core" init --store "$STORE" "${INIT_OPTS[@]}" >>"$LOGF" 2>&1
		doppel_up "$bin/doppel" "$STORE" "$MNT" "$LOGF"
		pid=$(doppel_daemon_pids "$bin/doppel" "$STORE" "$MNT" | head -1)
		cat "$SRC" >/dev/null
		c0=$(proc_cpu "$pid") b0=$(busy_cpu) m0=$(cached_kib) t0=$(date +%s%N)
		dd if="$SRC" of="$MNT/f" bs=1M conv=fsync status=none
		t1=$(date +%s%N) c1=$(proc_cpu "$pid") b1=$(busy_cpu) m1=$(cached_kib)
		w=$(secs "$t0" "$t1") wc=$(sub "$c0" "$c1")
		doppel_down "$bin/doppel" "$STORE" "$MNT" "$LOGF"
		sync
		echo 3 >/proc/sys/vm/drop_caches
		doppel_up "$bin/doppel" "$STORE" "$MNT" "$LOGF"
		pid=$(doppel_daemon_pids "$bin/doppel" "$STORE" "$MNT" | head -1)
		c0=$(proc_cpu "$pid") t0=$(date +%s%N)
		cat "$MNT/f" >/dev/null
		t1=$(date +%s%N) c1=$(proc_cpu "$pid")
		r=$(secs "$t0" "$t1") rc=$(sub "$c0" "$c1")
		doppel_down "$bin/doppel" "$STORE" "$MNT" "$LOGF"
		W[$label]+="$w " WC[$label]+="$wc " R[$label]+="$r " RC[$label]+="$rc "
		printf '%d %s write %.2f s (daemon %s s, busy %s s, page cache +%d MiB)  read %.2f s (daemon %s s)\n' \
			"$rep" "$label" "$w" "$wc" "$(sub "$b0" "$b1")" $(((m1 - m0) / 1024)) "$r" "$rc"
	done
done
for label in old new; do
	printf 'median %s: write %s s (daemon %s s), read %s s (daemon %s s)\n' "$label" \
		"$(median "${W[$label]}")" "$(median "${WC[$label]}")" "$(median "${R[$label]}")" "$(median "${RC[$label]}")"
done
