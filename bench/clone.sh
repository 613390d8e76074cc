#!/usr/bin/env bash
# Clone benchmarks (issue 5): doppel clone/snapshot next to reflink copies,
# btrfs snapshots and an overlay mount of the same trees, in one run.
#
#   bench/clone.sh            (or: make bench-clone; needs root for loop mounts)
#
# Parts (BENCH_PARTS; all by default, always in this order):
#   latency      For each size N in BENCH_SIZES, a tree of N files (bench/cmd/
#                gentree: 200-800 B of text each, 1,000 per directory) is written
#                into a fresh XFS image, copied into a subvolume of a fresh btrfs
#                image and imported into a fresh doppel volume. Then, interleaved,
#                BENCH_REPS times: doppel clone --lazy, doppel snapshot, btrfs
#                subvolume snapshot, fuse-overlayfs mount over the XFS tree; and
#                BENCH_COPY_REPS times cp -a --reflink=always on XFS and on btrfs.
#                Last, one default (background-materialized) doppel clone.
#   space        On the BENCH_SPACE_FILES volume: doppel df before and after a lazy
#                clone, and after appending a line to BENCH_CHANGED files of it, in
#                one directory and (second clone) one per directory.
#   materialize  For each size in BENCH_MATERIALIZE_SIZES: the time until the
#                background materializer has finished that default clone.
#   workload     Postmark, untar-and-build and a build in place, inside a lazy
#                clone versus inside its origin on the same volume, BENCH_WORK_REPS
#                times, interleaved (bench/clone-work.sh).
# Every command under test runs with a warm page cache, after a sync.
#
# Environment (defaults in brackets):
#   BENCH_DIR               work directory on a real disk [/var/tmp/doppel-bench-clone]
#   BENCH_PARTS             parts to run [latency space materialize workload]
#   BENCH_SIZES             tree sizes for latency [1000 100000 1000000]
#   BENCH_REPS              repetitions of the fast methods [7]
#   BENCH_HF_RUNS           hyperfine runs of doppel clone --lazy [30]
#   BENCH_COPY_REPS         repetitions of the cp --reflink copies [3]
#   BENCH_SPACE_FILES       tree size for the space part [100000]
#   BENCH_CHANGED           files changed in the space part [100]
#   BENCH_MATERIALIZE_SIZES sizes whose materialization is timed [1000 100000]
#   BENCH_WORKLOADS         workloads to run [postmark untar-build build]
#   BENCH_WORK_REPS         repetitions of each workload (even: each side goes
#                           first equally often) [6]
#   BENCH_PM_FILES, BENCH_PM_TX  postmark files and transactions [5000, 20000]
#   BENCH_BUILD_PKGS        packages the build workloads compile
#                           [./internal/schema ./internal/importer ./internal/chunker]
#   BENCH_OUT               Markdown report [docs/bench-clone.md]
#   BENCH_TIMEOUT           per-command timeout in seconds [3600]
#   BENCH_KEEP              1 = keep images and volumes afterwards [0]
set -euo pipefail

LOG_PREFIX=bench-clone
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DOPPEL_REPO_ROOT"
cmdline=$(bench_cmdline bench/clone.sh "$@")

BENCH_DIR=$(abspath "${BENCH_DIR:-/var/tmp/doppel-bench-clone}")
PARTS=" ${BENCH_PARTS:-latency space materialize workload} "
SIZES=${BENCH_SIZES:-1000 100000 1000000}
REPS=${BENCH_REPS:-7}
HF_RUNS=${BENCH_HF_RUNS:-30}
COPY_REPS=${BENCH_COPY_REPS:-3}
SPACE_FILES=${BENCH_SPACE_FILES:-100000}
CHANGED=${BENCH_CHANGED:-100}
MAT_SIZES=${BENCH_MATERIALIZE_SIZES:-1000 100000}
read -r -a WORKLOADS <<<"${BENCH_WORKLOADS:-postmark untar-build build}"
WORK_REPS=${BENCH_WORK_REPS:-6}
PM_FILES=${BENCH_PM_FILES:-5000}
PM_TX=${BENCH_PM_TX:-20000}
BUILD_PKGS=${BENCH_BUILD_PKGS:-./internal/schema ./internal/importer ./internal/chunker}
OUT=${BENCH_OUT:-docs/bench-clone.md}
CMD_TIMEOUT=${BENCH_TIMEOUT:-3600}
KEEP=${BENCH_KEEP:-0}
PER_DIR=1000 # gentree's files per directory
# shellcheck disable=SC2086 # lists of numbers
positive_ints $SIZES $MAT_SIZES "$REPS" "$COPY_REPS" "$SPACE_FILES" "$CHANGED" "$WORK_REPS" "$PM_FILES" "$PM_TX" "$CMD_TIMEOUT"
[ "$COPY_REPS" -le "$REPS" ] || die "BENCH_COPY_REPS must not exceed BENCH_REPS"
in_list() { [[ " $2 " == *" $1 "* ]]; }
part() { in_list "$1" "$PARTS"; }
for p in $PARTS; do
	case $p in latency | space | materialize | workload) ;; *) die "unknown part '$p' in BENCH_PARTS" ;; esac
done
for w in "${WORKLOADS[@]}"; do
	case $w in postmark | untar-build | build) ;; *) die "unknown workload '$w' in BENCH_WORKLOADS" ;; esac
done

need() { command -v "$1" >/dev/null 2>&1 || die "$1 missing (scripts/ensure-deps.sh --bench)"; }
need fusermount3
[ -c /dev/fuse ] || die "/dev/fuse missing"
if part latency || part space || part materialize; then
	for c in mkfs.xfs mkfs.btrfs btrfs losetup fuse-overlayfs; do need "$c"; done
fi
! part workload || need postmark

DOPPEL=$DOPPEL_REPO_ROOT/bin/doppel
GENTREE=$DOPPEL_REPO_ROOT/bin/gentree
LOGS=$BENCH_DIR/logs
XFS=$BENCH_DIR/xfs
BTRFS=$BENCH_DIR/btrfs
OVL=$BENCH_DIR/overlay
MNT=$BENCH_DIR/mnt
STORE="" # the doppel volume of the current size (or of the workload part)
OVL_MNT=""

cleanup() {
	local rc=$?
	set +e
	trap - EXIT
	trap '' INT TERM PIPE
	stop_timed
	[ -z "$OVL_MNT" ] || fuse_force_unmount "$OVL_MNT"
	[ -z "$STORE" ] || doppel_down "$DOPPEL" "$STORE" "$MNT" "$LOGS/doppel.log"
	loopfs_down_all
	if [ "$KEEP" != 1 ]; then
		rm -rf -- "$BENCH_DIR"/store-* "$OVL" "$BENCH_DIR"/*.img
	fi
	[ "$rc" -eq 0 ] || log "FAILED (exit $rc); logs in $LOGS"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p -- "$BENCH_DIR" "$LOGS"
rm -f -- "$LOGS"/*
for mp in "$MNT" "$XFS" "$BTRFS"; do
	! is_mounted "$mp" || die "$mp is still mounted (an interrupted run?): unmount it first"
done
rm -rf -- "$BENCH_DIR"/store-* "$OVL" "$BENCH_DIR"/*.img

log "building bin/doppel, bin/gentree"
go build -o "$(dirname "$DOPPEL")/" ./cmd/doppel ./cmd/doppel-core
go build -o "$GENTREE" ./bench/cmd/gentree

declare -A RES # RES[key] = "value value ..."
record() { RES[$1]+="$2 "; }
latest() { # latest KEY: the value last recorded under KEY
	local v
	read -r -a v <<<"${RES[$1]}"
	echo "${v[-1]}"
}

# shellcheck source=bench/clone-work.sh
. "$DOPPEL_REPO_ROOT/bench/clone-work.sh"
# shellcheck source=bench/clone-report.sh
. "$DOPPEL_REPO_ROOT/bench/clone-report.sh"

# --- volumes and trees -----------------------------------------------------------------

# volume_up NAME: a fresh doppel volume BENCH_DIR/store-NAME mounted on MNT.
volume_up() {
	STORE=$BENCH_DIR/store-$1
	"$DOPPEL" init --store "$STORE" >>"$LOGS/doppel.log"
	doppel_up "$DOPPEL" "$STORE" "$MNT" "$LOGS/doppel.log"
}

volume_down() {
	doppel_down "$DOPPEL" "$STORE" "$MNT" "$LOGS/doppel.log"
	[ "$KEEP" = 1 ] || rm -rf -- "$STORE"
	STORE=""
}

# prepare_size N: the N-file tree on XFS, in a btrfs subvolume and in a
# doppel volume (MNT/src).
prepare_size() {
	local n=$1 t
	loopfs_up xfs "$BENCH_DIR/xfs.img" $((n * (6144 + 2048 * COPY_REPS) / 1048576 + 1024)) "$XFS"
	loopfs_up btrfs "$BENCH_DIR/btrfs.img" $((n * 3072 * (1 + COPY_REPS) / 1048576 + 1024)) "$BTRFS"
	timed t "$GENTREE" -dir "$XFS/src" -files "$n" -per-dir "$PER_DIR" >"$LOGS/tree-$n.json"
	log "  $n files generated on XFS in ${t}s: $(cat "$LOGS/tree-$n.json")"
	btrfs subvolume create "$BTRFS/src" >/dev/null
	timed t cp -a "$XFS/src/." "$BTRFS/src/"
	log "  copied into a btrfs subvolume in ${t}s"
	volume_up "$n"
	timed t "$DOPPEL" import --quiet "$XFS/src" "$MNT/src" >>"$LOGS/doppel.log"
	"$DOPPEL" sync "$MNT"
	log "  imported into doppel in ${t}s"
	RES[import|$n]=$t
	sync
}

teardown_size() {
	volume_down
	loopfs_down "$XFS"
	loopfs_down "$BTRFS"
	[ "$KEEP" = 1 ] || rm -f -- "$BENCH_DIR/xfs.img" "$BENCH_DIR/btrfs.img"
}

# --- latency ---------------------------------------------------------------------------

# doppel_clone KEY N ARGS...: times "doppel ARGS --json" (clone or
# snapshot); records doppel's own figure and the CLI's wall time.
doppel_clone() {
	local key=$1 n=$2 t ns
	shift 2
	sync
	timed t "$DOPPEL" "$@" --json >"$LOGS/clone.json"
	ns=$(json_num elapsed_ns <"$LOGS/clone.json")
	[ -n "$ns" ] || die "no elapsed_ns in the output of doppel $*: $(cat "$LOGS/clone.json")"
	record "$key-ns|$n" "$(awk -v ns="$ns" 'BEGIN { printf "%.6f", ns / 1e9 }')"
	record "$key-wall|$n" "$t"
}

# timed_op KEY N CMD...: times CMD after a sync and records the seconds.
timed_op() {
	local key=$1 n=$2 t
	shift 2
	sync
	timed t "$@" >>"$LOGS/ops.log" 2>&1 || die "failed: $* (see $LOGS/ops.log)"
	record "$key|$n" "$t"
}

overlay_mount() { # overlay_mount REP N: times a fuse-overlayfs mount over the XFS tree
	local rep=$1 n=$2
	mkdir -p -- "$OVL/upper-$rep" "$OVL/work-$rep" "$OVL/mnt-$rep"
	OVL_MNT=$OVL/mnt-$rep
	timed_op overlay "$n" fuse-overlayfs -o "lowerdir=$XFS/src,upperdir=$OVL/upper-$rep,workdir=$OVL/work-$rep" "$OVL_MNT"
	[ -e "$OVL_MNT/d0000" ] || die "the overlay mount on $OVL_MNT does not show the tree"
	fusermount3 -u "$OVL_MNT"
	OVL_MNT=""
}

# cli_floor N: times "doppel --help", the CLI's start-up without a call
# to the daemon: the floor under the wall time of any doppel command.
cli_floor() {
	local t
	timed t "$DOPPEL" --help >/dev/null 2>&1 || true
	record "cli|$1" "$t"
}

# cli_hyperfine N: the CLI's wall time as hyperfine measures it (no shell,
# no timeout wrapper, 3 warm-up runs, HF_RUNS runs): doppel clone --lazy to
# one name, which an untimed rmclone frees before each run.
cli_hyperfine() {
	local n=$1 out=$LOGS/hyperfine-$1.json
	"$DOPPEL" clone --lazy "$MNT/src" "$MNT/hf" >/dev/null
	hyperfine -N --style none --warmup 3 --runs "$HF_RUNS" --export-json "$out" \
		--prepare "$DOPPEL rmclone $MNT/hf" \
		"$DOPPEL clone --lazy $MNT/src $MNT/hf" >>"$LOGS/ops.log" 2>&1 ||
		die "hyperfine of doppel clone failed (see $LOGS/ops.log)"
	"$DOPPEL" rmclone "$MNT/hf"
	RES[hf-lazy|$n]=$(json_num median <"$out")
	RES[hf-lazy-runs|$n]=$HF_RUNS
}

latency() {
	local n=$1 rep
	cli_hyperfine "$n"
	for ((rep = 1; rep <= REPS; rep++)); do
		cli_floor "$n"
		doppel_clone lazy "$n" clone --lazy "$MNT/src" "$MNT/lazy-$rep"
		doppel_clone snap "$n" snapshot "$MNT/src" "$MNT/snap-$rep"
		if [ "$rep" -le "$COPY_REPS" ]; then
			timed_op cp-xfs "$n" cp -a --reflink=always "$XFS/src" "$XFS/copy-$rep"
			timed_op cp-btrfs "$n" cp -a --reflink=always "$BTRFS/src" "$BTRFS/copy-$rep"
		fi
		timed_op btrfs-snap "$n" btrfs subvolume snapshot "$BTRFS/src" "$BTRFS/snap-$rep"
		overlay_mount "$rep" "$n"
		log "  rep $rep/$REPS: doppel clone --lazy $(dur "$(latest "lazy-ns|$n")") (CLI $(dur "$(latest "lazy-wall|$n")"))"
	done
}

# --- space -----------------------------------------------------------------------------

# space_point LABEL [CLONE]: records the volume's metadata and data
# bytes, and inodes, after a sync; and the metadata records of CLONE's
# subtree.
space_point() {
	local out
	"$DOPPEL" sync "$MNT"
	out=$("$DOPPEL" df --json "$MNT")
	RES[space-meta|$1]=$(json_num meta_bytes <<<"$out")
	RES[space-phys|$1]=$(json_num physical_bytes <<<"$out")
	RES[space-inodes|$1]=$(json_num inodes <<<"$out")
	[ $# -lt 2 ] || RES[space-sub|$1]=$("$DOPPEL" df --json "$2" | json_num meta_bytes)
}

# changed_file N K SPREAD: the K-th file to change; all in the first
# directory, or (SPREAD) one per directory round-robin.
changed_file() {
	local dirs=$(((($1) + PER_DIR - 1) / PER_DIR)) k=$2
	if [ "$3" = spread ]; then
		printf 'd%04d/f%05d\n' $((k % dirs)) $((k / dirs))
	else
		printf 'd%04d/f%05d\n' $((k / PER_DIR)) $((k % PER_DIR))
	fi
}

space() {
	local n=$1 how k
	for how in one spread; do
		space_point "before-$how"
		"$DOPPEL" clone --lazy "$MNT/src" "$MNT/space-$how" >>"$LOGS/doppel.log"
		space_point "clone-$how" "$MNT/space-$how"
		for ((k = 0; k < CHANGED; k++)); do
			echo "changed in the clone" >>"$MNT/space-$how/$(changed_file "$n" "$k" "$how")"
		done
		space_point "changed-$how" "$MNT/space-$how"
		log "  space ($how): meta ${RES[space-meta|before-$how]} -> ${RES[space-meta|clone-$how]} -> ${RES[space-meta|changed-$how]} bytes"
	done
}

# --- materialization ---------------------------------------------------------------------

# chunk_refs FILE: the references to FILE's first chunk in the volume.
chunk_refs() { "$DOPPEL" stat --json "$1" | json_num refs; }

# full_clone N: times a default clone of MNT/src to MNT/full and, if N is
# in BENCH_MATERIALIZE_SIZES, waits until it is materialized. The
# materializer goes breadth first in name order and gives each file its
# own extents (one more reference to its chunk), so the clone is done when
# the source's last file in that order has one reference more.
full_clone() {
	local n=$1 probe base t0 t1 last=0 deadline=$((SECONDS + CMD_TIMEOUT))
	probe=$MNT/src/$(printf 'd%04d/f%05d' $(((n - 1) / PER_DIR)) $(((n - 1) % PER_DIR)))
	base=$(chunk_refs "$probe")
	t0=$(now_ns)
	doppel_clone full "$n" clone "$MNT/src" "$MNT/full"
	in_list "$n" "$MAT_SIZES" && part materialize || return 0
	while [ "$(chunk_refs "$probe")" -le "$base" ]; do
		if [ $((SECONDS - last)) -ge 30 ]; then
			log "  materializing: $("$DOPPEL" df --json "$MNT" | json_num inodes) inodes in the volume"
			last=$SECONDS
		fi
		[ "$SECONDS" -lt "$deadline" ] || die "materialization of $n files did not finish in ${CMD_TIMEOUT}s"
		sleep 0.5
	done
	t1=$(now_ns)
	RES[mat|$n]=$(secs "$t0" "$t1")
	RES[mat-inodes|$n]=$("$DOPPEL" df --json "$MNT" | json_num inodes)
	log "  materialized in ${RES[mat|$n]}s"
}

# --- run -----------------------------------------------------------------------------------

bench_start
sizes="" # the trees to make, each once
! part latency || sizes=$SIZES
! part space || in_list "$SPACE_FILES" "$sizes" || sizes+=" $SPACE_FILES"
if part materialize; then
	for n in $MAT_SIZES; do in_list "$n" "$sizes" || sizes+=" $n"; done
fi
for n in $sizes; do
	log "$n files: preparing the trees"
	prepare_size "$n"
	if part latency && in_list "$n" "$SIZES"; then latency "$n"; fi
	if part space && [ "$n" = "$SPACE_FILES" ]; then space "$n"; fi
	if { part latency && in_list "$n" "$SIZES"; } || { part materialize && in_list "$n" "$MAT_SIZES"; }; then
		full_clone "$n"
	fi
	teardown_size
done
! part workload || workloads
elapsed=$(($(date +%s) - RUN_STARTED))
log "measurements done in ${elapsed}s"

mkdir -p -- "$(dirname "$OUT")"
report >"$OUT"
log "report written to $OUT"
