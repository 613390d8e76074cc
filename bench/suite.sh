#!/usr/bin/env bash
# The performance suite of issue 4: doppel (default settings) side by side
# with a go-fuse loopback passthrough of the same disk, the native file
# system, and btrfs and XFS on loop-mounted image files on the same disk.
#
#   bench/suite.sh                  (or: make bench-suite)
#   BENCH_QUICK=1 bench/suite.sh    small sizes, a few minutes; report under BENCH_DIR
#
# As root (it drops caches and mounts loop devices). At full size one
# repetition takes 6-22 minutes on 2 shared cores (the three default ones:
# 19 minutes on a quiet AMD EPYC VM, an hour on a loaded Xeon one).
#
# Workloads (each repetition runs every workload on every target in turn,
# so that the machine's noise falls on all of them alike; medians reported):
#   seq       fio, 1 MiB I/O: write SIZE of unique random data with a final
#             fsync; remount + drop caches; read it back; on doppel and
#             native, write the same data again under another name, right
#             after the read and again after dropping the caches (the
#             target row; doppel's physical growth from `doppel df --json`)
#   rand      fio, random 4 KiB writes into a RAND_FILE file (laid out
#             first, untimed), iodepth 1 and 16, buffered (see below),
#             final fsync [passthrough, doppel, native]
#   files     bench/cmd/fileops: create+write FILE_SIZE bytes, stat, unlink
#             of FILES files in one directory
#   build     untar a copy of the Go toolchain ($(go env GOROOT), tarred once
#             into BENCH_DIR/cache), then `go build BUILD_PKGS` with that
#             toolchain, its GOCACHE inside the target (cold), offline
#   postmark  Debian's postmark with a fixed configuration
# and the doppel daemon's peak RSS (VmHWM) during each workload.
#
# The random writes are buffered (direct=0) with the io_uring engine: the
# loopback passes O_DIRECT on to its backing file, so each 4 KiB write would
# wait for the disk there, while doppel would buffer it - the two would not
# do the same work. io_uring still lets fio keep 16 writes in flight.
#
# Results: BENCH_DIR/run/results.tsv (every measurement), then
# bench/cmd/benchreport writes the report (BENCH_REPORT), its SVG charts
# (next to it, in a directory of the same name) and the "Issue 4 suite"
# section of BENCH_SUMMARY. Progress: one line per step, with elapsed time.
#
# Environment (defaults in brackets; BENCH_QUICK=1 ones in braces):
#   BENCH_DIR            work directory on a real disk [/var/tmp/doppel-bench-suite]
#   BENCH_REPS           repetitions [3] {1}
#   BENCH_SIZE_MIB       sequential file size [4096] {256}
#   BENCH_RAND_FILE_MIB  random-write file size [1024] {128}
#   BENCH_RAND_IO_MIB    bytes written by each random-write run [256] {16}
#   BENCH_RAND_ENGINE    fio ioengine of the random writes [io_uring]
#   BENCH_FILES          files of the metadata workload [100000] {5000}
#   BENCH_FILE_SIZE      bytes per file [1024]
#   BENCH_PM_FILES       postmark files [20000] {2000}
#   BENCH_PM_TX          postmark transactions [50000] {5000}
#   BENCH_PM_SIZES       postmark file sizes, "MIN MAX" bytes ["500 10000"]
#   BENCH_BUILD_PKGS     what `go build` builds, e.g. "std" for more [cmd/gofmt] {fmt}
#   BENCH_TARGETS        subset of "passthrough doppel native btrfs xfs" [all]
#   BENCH_WORKLOADS      subset of "seq rand files build postmark" [all]
#   BENCH_REPORT         report file [docs/bench-suite.md] {BENCH_DIR/report/bench-suite.md}
#   BENCH_SUMMARY        file whose "Issue 4 suite" section is rewritten
#                        [docs/BENCHMARKS.md] {none}; "none" to skip
#   BENCH_TIMEOUT        per-command timeout in seconds [3600]
#   BENCH_KEEP           1 = keep the data directories and images afterwards [0]
set -euo pipefail

LOG_PREFIX=suite
# shellcheck source=bench/suite-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/suite-lib.sh"
cd "$DOPPEL_REPO_ROOT"

cmdline=$(bench_cmdline bench/suite.sh)

# pick FULL QUICK: the default for the current mode.
QUICK=${BENCH_QUICK:-0}
pick() { if [ "$QUICK" = 1 ]; then echo "$2"; else echo "$1"; fi; }

BENCH_DIR=$(abspath "${BENCH_DIR:-/var/tmp/doppel-bench-suite}")
REPS=${BENCH_REPS:-$(pick 3 1)}
SIZE_MIB=${BENCH_SIZE_MIB:-$(pick 4096 256)}
RAND_FILE_MIB=${BENCH_RAND_FILE_MIB:-$(pick 1024 128)}
RAND_IO_MIB=${BENCH_RAND_IO_MIB:-$(pick 256 16)}
RAND_ENGINE=${BENCH_RAND_ENGINE:-io_uring}
NFILES=${BENCH_FILES:-$(pick 100000 5000)}
FILE_SIZE=${BENCH_FILE_SIZE:-1024}
PM_FILES=${BENCH_PM_FILES:-$(pick 20000 2000)}
PM_TX=${BENCH_PM_TX:-$(pick 50000 5000)}
read -r PM_MIN PM_MAX <<<"${BENCH_PM_SIZES:-500 10000}"
BUILD_PKGS=${BENCH_BUILD_PKGS:-$(pick cmd/gofmt fmt)}
read -r -a TARGETS <<<"${BENCH_TARGETS:-passthrough doppel native btrfs xfs}"
read -r -a WORKLOADS <<<"${BENCH_WORKLOADS:-seq rand files build postmark}"
REPORT=${BENCH_REPORT:-$(pick docs/bench-suite.md "$BENCH_DIR/report/bench-suite.md")}
SUMMARY=${BENCH_SUMMARY:-$(pick docs/BENCHMARKS.md none)}
CMD_TIMEOUT=${BENCH_TIMEOUT:-3600}
KEEP=${BENCH_KEEP:-0}

positive_ints "$REPS" "$SIZE_MIB" "$RAND_FILE_MIB" "$RAND_IO_MIB" "$NFILES" "$FILE_SIZE" \
	"$PM_FILES" "$PM_TX" "$PM_MIN" "$PM_MAX" "$CMD_TIMEOUT"
[ "$RAND_IO_MIB" -le "$RAND_FILE_MIB" ] || die "BENCH_RAND_IO_MIB must not exceed BENCH_RAND_FILE_MIB"
for t in "${TARGETS[@]}"; do
	case $t in passthrough | doppel | native | btrfs | xfs) ;; *) die "unknown target '$t' in BENCH_TARGETS" ;; esac
done
for w in "${WORKLOADS[@]}"; do
	case $w in seq | rand | files | build | postmark) ;; *) die "unknown workload '$w' in BENCH_WORKLOADS" ;; esac
done
[ "$(id -u)" -eq 0 ] || die "run as root: the suite drops caches and mounts loop devices"
bench_require_fuse
for c in fio postmark mkfs.btrfs mkfs.xfs losetup; do
	command -v "$c" >/dev/null 2>&1 || die "$c missing: run scripts/ensure-deps.sh --bench"
done
bench_paths
RUN=$BENCH_DIR/run
CACHE=$BENCH_DIR/cache
TARBALL=$CACHE/goroot-$(go env GOVERSION).tar
LOAD_PID=""

cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	stop_timed
	[ -z "$LOAD_PID" ] || kill "$LOAD_PID" 2>/dev/null
	bench_teardown
	[ "$KEEP" = 1 ] || rm -rf -- "$LB_ORIG" "$D_STORE" "$N_DIR"
	[ "$rc" -eq 0 ] || log "FAILED (exit $rc); logs in $LOGS"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# shellcheck source=bench/suite-workloads.sh
. "$DOPPEL_REPO_ROOT/bench/suite-workloads.sh"

# --- setup -----------------------------------------------------------------------------
LOG_T0=$(date +%s)
mkdir -p -- "$BENCH_DIR" "$LOGS" "$RUN" "$CACHE"
case $(stat -f -c %T "$BENCH_DIR") in
tmpfs | ramfs) warn "BENCH_DIR $BENCH_DIR is not on a real disk: figures are not representative" ;;
esac
bench_clear_leftovers
rm -rf -- "$LB_ORIG" "$D_STORE" "$N_DIR"
rm -f -- "$LOGS"/* "$RUN"/*
mkdir -p -- "$LB_ORIG" "$N_DIR"

# One target holds its data at a time, but doppel keeps the second copy and
# frees chunks in the background, and the images are sparse.
IMG_MIB=$((SIZE_MIB + RAND_FILE_MIB + 4096))
avail_mib=$(df -Pm "$BENCH_DIR" | awk 'NR == 2 { print $4 }')
need_mib=$((SIZE_MIB * 2 + 4096))
[ "$avail_mib" -ge "$need_mib" ] || warn "only ${avail_mib} MiB free in $BENCH_DIR; the run may need ${need_mib} MiB"

bench_build doppel loopback fileops benchreport
if has build "${WORKLOADS[@]}" && [ ! -s "$TARBALL" ]; then
	log "tarring $(go env GOROOT) into $TARBALL (once)"
	tar -C "$(dirname "$(go env GOROOT)")" -cf "$TARBALL.tmp" "$(basename "$(go env GOROOT)")"
	mv -- "$TARBALL.tmp" "$TARBALL"
fi

for t in "${TARGETS[@]}"; do
	case $t in
	passthrough) mount_loopback ;;
	doppel)
		INIT_OUT=$(doppel_init)
		log "$INIT_OUT"
		mount_doppel
		;;
	btrfs | xfs) loopfs_create "$t" "$IMG_MIB" ;;
	esac
done

{
	machine_rows
	echo "| fio | $(fio --version) |"
	echo "| postmark | $(dpkg-query -W -f '${Version}' postmark 2>/dev/null || echo unknown) (Debian package) |"
	echo "| btrfs-progs | $(mkfs.btrfs --version 2>&1 | head -1) |"
	echo "| xfsprogs | $(mkfs.xfs -V 2>&1 | head -1) |"
	echo "| go-fuse (passthrough and doppel) | $(go list -m -f '{{.Version}}' github.com/hanwen/go-fuse/v2) |"
} >"$RUN/machine.md"
meta cmdline "$cmdline"
meta quick "$QUICK"
meta reps "$REPS"
meta size_mib "$SIZE_MIB"
meta rand_file_mib "$RAND_FILE_MIB"
meta rand_io_mib "$RAND_IO_MIB"
meta rand_engine "$RAND_ENGINE"
meta files "$NFILES"
meta file_size "$FILE_SIZE"
meta pm_files "$PM_FILES"
meta pm_tx "$PM_TX"
meta pm_min "$PM_MIN"
meta pm_max "$PM_MAX"
meta build_pkgs "$BUILD_PKGS"
if has build "${WORKLOADS[@]}"; then
	meta tree_root "$(go env GOROOT)"
	meta tree_version "$(go env GOVERSION)"
	meta tree_entries "$(tar -tf "$TARBALL" | wc -l)"
	meta tree_bytes "$(stat -c %s "$TARBALL")"
fi
meta targets "${TARGETS[*]}"
meta workloads "${WORKLOADS[*]}"
meta doppel_init "${INIT_OUT:-}"
meta load_start "$(cut -d' ' -f1-3 /proc/loadavg)"

# The 1-minute load average every 10 s, to show how busy the machine was.
(while sleep 10; do cut -d' ' -f1 /proc/loadavg; done) >"$RUN/load.txt" &
LOAD_PID=$!

log "targets: ${TARGETS[*]}; workloads: ${WORKLOADS[*]}; $REPS reps; dir: $BENCH_DIR; load $(cut -d' ' -f1-3 /proc/loadavg)"

# --- run ---------------------------------------------------------------------------------
for ((rep = 1; rep <= REPS; rep++)); do
	for w in "${WORKLOADS[@]}"; do
		log "repetition $rep/$REPS: $w"
		for t in "${TARGETS[@]}"; do
			runs_on "$w" "$t" || continue
			"wl_$w" "$t" "$rep"
		done
	done
done

kill "$LOAD_PID" 2>/dev/null || true
LOAD_PID=""
meta load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
meta caches_dropped "$CACHES_DROPPED"
meta date_utc "$(date -u '+%Y-%m-%d %H:%M UTC')"
meta duration_s $(($(date +%s) - LOG_T0))
log "measurements done"

summary_flag=()
[ "$SUMMARY" = none ] || summary_flag=(-summary "$SUMMARY")
"$BIN/benchreport" -run "$RUN" -report "$REPORT" "${summary_flag[@]}"
log "report written to $REPORT${summary_flag[*]:+ and the section in $SUMMARY}"
