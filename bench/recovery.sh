#!/usr/bin/env bash
# bench/recovery.sh: how long a mount takes after a crash, by the number
# of chunks in the volume. Crash recovery compares the chunks written in
# the crashed session's segments with the whole chunk table
# (docs/DURABILITY.md, "Limits"); this measures what that costs.
#
# For each size in BENCH_RECOVERY_GIB (default "1 4 8"), on a fresh
# embedded volume with fixed 4 KiB chunks (262,144 chunks per GiB): write
# that much random data, sync, write 64 MiB more without syncing, kill -9
# the daemon, then time `doppel mount` (until the mount is ready) and read
# the recovery's own time from the daemon's log; then a clean unmount and
# a clean mount, timed the same way. Run as root; about a minute per GiB
# here. Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

cmdline=$(bench_cmdline bench/recovery.sh "$@")
sizes=${BENCH_RECOVERY_GIB:-"1 4 8"}
# shellcheck disable=SC2086
positive_ints $sizes
[ "$(id -u)" = 0 ] || die "run as root (FUSE mounts)"

make --no-print-directory build >/dev/null
doppel=$PWD/bin/doppel
work=$(mktemp -d /var/tmp/doppel-recovery.XXXXXX)
store=$work/store mnt=$work/mnt logf=$work/bench.log
cleanup() {
	stop_timed
	doppel_down "$doppel" "$store" "$mnt" "$logf" 2>/dev/null || true
	rm -rf -- "$work"
}
trap cleanup EXIT

# took_from_log: the recovery's "took" from the last recovery line.
took_from_log() {
	grep 'recovered after an unclean shutdown' "$store/daemon.log" | tail -n 1 |
		sed -n 's/.*took=\([^ ]*\).*/\1/p'
}

echo "$cmdline"
echo
echo "| data (4 KiB chunks) | chunks | mount after kill -9 | recovery's own time | clean mount |"
echo "|---|---|---|---|---|"
for gib in $sizes; do
	doppel_down "$doppel" "$store" "$mnt" "$logf" 2>/dev/null || true
	rm -rf -- "$store"
	"$doppel" init --store "$store" --chunking fixed:4K >>"$logf" 2>&1
	doppel_up "$doppel" "$store" "$mnt" "$logf"
	log "writing $gib GiB"
	head -c "$((gib << 30))" /dev/urandom >"$mnt/data"
	"$doppel" sync "$mnt" >>"$logf" 2>&1
	chunks=$("$doppel" df --json "$mnt" | json_num chunks)
	head -c $((64 << 20)) /dev/urandom >"$mnt/unsynced"
	pids=$(doppel_daemon_pids "$doppel" "$store" "$mnt")
	# shellcheck disable=SC2086
	kill -KILL $pids
	for p in $pids; do
		while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
	done
	drop_caches
	timed crash "$doppel" mount --store "$store" "$mnt" >>"$logf" 2>&1
	took=$(took_from_log)
	"$doppel" umount "$mnt" >>"$logf" 2>&1
	drop_caches
	timed clean "$doppel" mount --store "$store" "$mnt" >>"$logf" 2>&1
	printf '| %s GiB | %s | %.2f s | %s | %.2f s |\n' "$gib" "$chunks" "$crash" "${took:-?}" "$clean"
	doppel_down "$doppel" "$store" "$mnt" "$logf"
done
