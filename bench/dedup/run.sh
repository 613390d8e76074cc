#!/usr/bin/env bash
# Dedup effectiveness on real data: doppel versus btrfs and XFS with
# duperemove, and restic, side by side in one run (issue 4).
#
#   bench/dedup/run.sh            (or: make bench-dedup)
#
# Datasets (bench/dedup/fetch.sh fetches them, pinned, into DEDUP_CACHE):
#   go-releases    20 releases of github.com/aws/aws-sdk-go-v2/service/ec2
#   debian-images  5 Debian root file systems as 1 GiB ext4 image files
# For each dataset, on a fresh volume / file system / repository each:
#   doppel    doppel import --store (offline) with the default CDC, and
#             with fixed 4 KiB blocks
#   btrfs, xfs  loop-mounted image file: cp -a the dataset in, then dedupe
#             it: duperemove -dr (its default), duperemove -b 4096 with
#             --dedupe-options=same,partial (block mode), fdupes |
#             duperemove --fdupes (whole files), and bench/cmd/blockdedupe
#             (every duplicate 4 KiB block); see systems.sh
#   restic    restic backup, compression off
# then ingest speed alone, BENCH_REPS times interleaved: doppel import
# versus the hashing passes of duperemove and blockdedupe; and, without
# writing anything, chunkstat (bench/cmd/chunkstat): distinct bytes and
# chunk sizes under several chunking policies. docs/DEDUP.md explains it.
#
# Writes a Markdown report to BENCH_OUT and prints it. Needs root (loop
# mounts, debootstrap). Loop devices and mounts are released on any exit.
#
# Environment (defaults in brackets):
#   BENCH_DIR       work directory on a real disk [/var/tmp/doppel-bench-dedup]
#   DEDUP_CACHE     dataset cache [/var/tmp/doppel-datasets]
#   BENCH_DATASETS  datasets to run ["go-releases debian-images"]
#   BENCH_SYSTEMS   systems to run ["doppel btrfs xfs restic"]
#   BENCH_MODES     file system dedupe modes ["default block4k file blocks"]
#   BENCH_REPS      repetitions of the throughput phase, 0 = skip it [3]
#   BENCH_POLICIES  chunkstat policies ["cdc,fixed:4K,cdc:8K:32K:128K,cdc:4K:16K:64K"]
#   BENCH_OUT       report file [docs/dedup-results.md]
#   BENCH_TIMEOUT   per-command timeout in seconds [7200]
#   BENCH_KEEP      1 = keep the work directory afterwards [0]
#   BENCH_FETCH     0 = use the cache as it is, do not run fetch.sh [1]
set -euo pipefail

LOG_PREFIX=bench-dedup
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"

case ${1:-} in
-h | --help)
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}"
	exit 0
	;;
"") ;;
*) die "no arguments expected (settings are environment variables; see --help)" ;;
esac
cd "$DOPPEL_REPO_ROOT"

# The exact invocation (BENCH_* overrides included), for the report.
cmdline=""
for v in BENCH_DIR DEDUP_CACHE BENCH_DATASETS BENCH_SYSTEMS BENCH_MODES BENCH_REPS BENCH_POLICIES \
	BENCH_OUT BENCH_TIMEOUT BENCH_KEEP BENCH_FETCH; do
	if [ -n "${!v+x}" ]; then cmdline+="$v=$(printf '%q' "${!v}") "; fi
done
cmdline+="bench/dedup/run.sh"

WORK=$(abspath "${BENCH_DIR:-/var/tmp/doppel-bench-dedup}")
export DEDUP_CACHE=${DEDUP_CACHE:-/var/tmp/doppel-datasets}
CACHE=$(abspath "$DEDUP_CACHE")
DATASETS=${BENCH_DATASETS:-go-releases debian-images}
SYSTEMS=${BENCH_SYSTEMS:-doppel btrfs xfs restic}
MODES=${BENCH_MODES:-default block4k file blocks}
REPS=${BENCH_REPS:-3}
POLICIES=${BENCH_POLICIES:-cdc,fixed:4K,cdc:8K:32K:128K,cdc:4K:16K:64K}
OUT=${BENCH_OUT:-docs/dedup-results.md}
CMD_TIMEOUT=${BENCH_TIMEOUT:-7200}
KEEP=${BENCH_KEEP:-0}
FETCH=${BENCH_FETCH:-1}
LOGS=$WORK/logs
DOPPEL=$DOPPEL_REPO_ROOT/bin/doppel
CHUNKSTAT=$DOPPEL_REPO_ROOT/bin/chunkstat
BLOCKDEDUPE=$DOPPEL_REPO_ROOT/bin/blockdedupe
RESULTS=$WORK/results.tsv
THROUGHPUT=$WORK/throughput.tsv

[[ $REPS =~ ^[0-9]+$ ]] || die "BENCH_REPS must be a number, got '$REPS'"
[ "$(id -u)" -eq 0 ] || die "needs root (loop mounts, debootstrap)"
for c in duperemove fdupes mkfs.btrfs mkfs.xfs restic losetup; do
	command -v "$c" >/dev/null || die "$c missing: run scripts/ensure-deps.sh --dedup"
done

MOUNTS=()
LOOPS=()
cleanup() {
	local rc=$? i
	set +e
	trap - EXIT INT TERM
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}"
	done
	for dev in "${LOOPS[@]}"; do losetup -d "$dev"; done
	if is_mounted "$WORK/mnt"; then
		log "$WORK/mnt is still mounted; leaving $WORK as it is"
	else
		rm -f -- "$WORK"/*.img
		rm -rf -- "$WORK/doppel-store" "$WORK/restic-repo" "$WORK/restic-cache"
		rmdir -- "$WORK/mnt" 2>/dev/null
		[ "$KEEP" = 1 ] || [ "$rc" -ne 0 ] || rm -rf -- "$WORK"
	fi
	[ "$rc" -eq 0 ] || log "FAILED (exit $rc); logs in $LOGS"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

START=$(now_ns)
# log with the elapsed time and the load average, which matter on a shared box.
log() {
	local s=$((($(now_ns) - START) / 1000000000))
	printf '[%s %02d:%02d load %s] %s\n' "$LOG_PREFIX" $((s / 60)) $((s % 60)) \
		"$(cut -d' ' -f1 /proc/loadavg)" "$*" >&2
}

# timed LOGFILE CMD...: runs CMD (output to LOGFILE), prints its seconds.
timed() {
	local logfile=$1 t0 t1
	shift
	echo "+ $*" >>"$logfile"
	t0=$(now_ns)
	timeout "$CMD_TIMEOUT" "$@" >>"$logfile" 2>&1 || die "failed: $* (see $logfile)"
	t1=$(now_ns)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", (b - a) / 1e9 }'
}

# record DATASET SYSTEM MODE BEFORE DATA TOTAL SECONDS COPY_SECONDS (see systems.sh)
record() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" "$(cut -d' ' -f1 /proc/loadavg)" >>"$RESULTS"
	log "  -> $(human_bytes "$6") on disk, ${7} s"
}

# shellcheck source=bench/dedup/systems.sh
. "$DOPPEL_REPO_ROOT/bench/dedup/systems.sh"
# shellcheck source=bench/dedup/report.sh
. "$DOPPEL_REPO_ROOT/bench/dedup/report.sh"

mkdir -p -- "$WORK" "$LOGS"
rm -f -- "$RESULTS" "$THROUGHPUT" "$WORK"/*.img
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

log "building bin/doppel, bin/chunkstat and bin/blockdedupe"
go build -o "$(dirname "$DOPPEL")/" ./cmd/doppel ./cmd/doppel-core
go build -o "$CHUNKSTAT" ./bench/cmd/chunkstat
go build -o "$BLOCKDEDUPE" ./bench/cmd/blockdedupe
if [ "$FETCH" = 1 ]; then
	# shellcheck disable=SC2086 # word splitting of the dataset list is wanted
	bench/dedup/fetch.sh $DATASETS
fi

steps=0
for ds in $DATASETS; do
	for sys in $SYSTEMS; do
		case $sys in
		doppel) steps=$((steps + 2)) ;;
		btrfs | xfs) steps=$((steps + $(wc -w <<<"$MODES"))) ;;
		restic) steps=$((steps + 1)) ;;
		*) die "unknown system in BENCH_SYSTEMS: $sys" ;;
		esac
	done
	steps=$((steps + 1)) # chunkstat
	[ "$REPS" -eq 0 ] || steps=$((steps + 1))
done
step=0
next() {
	step=$((step + 1))
	log "[$step/$steps] $*"
}

for ds in $DATASETS; do
	src=$CACHE/$ds
	[ -d "$src" ] || die "dataset $ds is missing in $CACHE"
	next "$ds: chunkstat ($POLICIES)"
	"$CHUNKSTAT" -policy "$POLICIES" "$src" >"$WORK/chunkstat-$ds.md"
	"$CHUNKSTAT" -policy "$POLICIES" -json "$src" >"$WORK/chunkstat-$ds.json"
	for sys in $SYSTEMS; do
		case $sys in
		doppel)
			for policy in cdc fixed:4K; do
				next "$ds: doppel import, chunking $policy"
				run_doppel "$ds" "$src" "$policy"
			done
			;;
		btrfs | xfs)
			for mode in $MODES; do
				next "$ds: $sys, dedupe mode $mode"
				run_fs "$ds" "$src" "$sys" "$mode"
			done
			;;
		restic)
			next "$ds: restic backup"
			run_restic "$ds" "$src"
			;;
		esac
	done
	if [ "$REPS" -gt 0 ]; then
		next "$ds: throughput, $REPS interleaved repetitions"
		run_throughput "$ds" "$src" "$REPS"
	fi
done

LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p -- "$(dirname "$OUT")"
write_report >"$OUT"
cat "$OUT"
log "report written to $OUT"
