#!/usr/bin/env bash
# doppel import versus cp -a into a mounted volume, same tree, same run.
#
#   bench/import.sh            (or: make bench-import)
#
# The tree: a copy of the Go toolchain's source ($(go env GOROOT)/src) and
# one file of BENCH_RANDOM_MIB MiB of random data. Every repetition runs,
# interleaved, each on a fresh volume (so that nothing deduplicates against
# an earlier copy), with the source in the page cache:
#   cp        cp -a SRC MNT/tree, then doppel sync MNT
#   mounted   doppel import SRC MNT/tree   (the daemon imports)
#   offline   doppel import --store STORE SRC /tree   (volume not mounted)
# All three end with everything durable. Medians are reported, as a
# Markdown table on stdout.
#
# Environment (defaults in brackets):
#   BENCH_DIR         work directory on a real disk [/var/tmp/doppel-bench-import]
#   BENCH_REPS        repetitions [3]
#   BENCH_RANDOM_MIB  size of the random file in MiB [1024]
#   BENCH_JOBS        -j values for the mounted import, e.g. "1 2 4" [default only]
#   BENCH_KEEP        1 = keep the work directory afterwards [0]
set -euo pipefail

LOG_PREFIX=bench-import
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DOPPEL_REPO_ROOT"

BENCH_DIR=$(abspath "${BENCH_DIR:-/var/tmp/doppel-bench-import}")
REPS=${BENCH_REPS:-3}
RANDOM_MIB=${BENCH_RANDOM_MIB:-1024}
JOBS=${BENCH_JOBS:-}
KEEP=${BENCH_KEEP:-0}
positive_ints "$REPS" "$RANDOM_MIB"
command -v fusermount3 >/dev/null 2>&1 || die "fusermount3 missing (scripts/ensure-deps.sh)"
[ -c /dev/fuse ] || die "/dev/fuse missing"

DOPPEL=$DOPPEL_REPO_ROOT/bin/doppel
SRC=$BENCH_DIR/src
STORE=$BENCH_DIR/store
MNT=$BENCH_DIR/mnt
LOGS=$BENCH_DIR/logs

cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	stop_timed
	doppel_down "$DOPPEL" "$STORE" "$MNT" "$LOGS/doppel.log"
	rm -rf -- "$STORE"
	[ "$KEEP" = 1 ] || rm -rf -- "$SRC"
	[ "$rc" -eq 0 ] || log "FAILED (exit $rc); logs in $LOGS"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p -- "$BENCH_DIR" "$LOGS" "$MNT"
log "building bin/doppel"
go build -o "$(dirname "$DOPPEL")/" ./cmd/doppel ./cmd/doppel-core

if [ ! -f "$SRC/random" ] || [ "$(stat -c %s "$SRC/random")" -ne $((RANDOM_MIB << 20)) ]; then
	log "making the source tree in $SRC"
	rm -rf -- "$SRC"
	mkdir -p -- "$SRC"
	cp -a "$(go env GOROOT)/src" "$SRC/go"
	head -c $((RANDOM_MIB << 20)) /dev/urandom >"$SRC/random"
fi
files=$(find "$SRC" -type f | wc -l)
dirs=$(find "$SRC" -type d | wc -l)
bytes=$(du -sb --apparent-size "$SRC" | cut -f1)
log "tree: $files files, $dirs directories, $(human_bytes "$bytes")"

fresh_store() {
	doppel_down "$DOPPEL" "$STORE" "$MNT" "$LOGS/doppel.log"
	rm -rf -- "$STORE"
	"$DOPPEL" init --store "$STORE" >>"$LOGS/doppel.log"
	if [ "$1" = mounted ]; then
		doppel_up "$DOPPEL" "$STORE" "$MNT" "$LOGS/doppel.log"
	fi
}

# warm_timed CMD...: runs CMD after warming the source's page cache;
# prints the seconds it took.
warm_timed() {
	cat "$SRC/random" >/dev/null
	find "$SRC" -type f -exec cat {} + >/dev/null
	local t
	timed t "$@" >>"$LOGS/run.log" 2>&1 || die "failed: $* (see $LOGS/run.log)"
	printf '%.2f\n' "$t"
}

run_cp() { cp -a "$SRC" "$MNT/tree" && "$DOPPEL" sync "$MNT"; }

declare -A results
variants=(cp mounted offline)
for j in $JOBS; do variants+=("mounted-j$j"); done
for rep in $(seq 1 "$REPS"); do
	for v in "${variants[@]}"; do
		case $v in
		cp) fresh_store mounted; t=$(warm_timed run_cp) ;;
		mounted) fresh_store mounted; t=$(warm_timed "$DOPPEL" import --quiet "$SRC" "$MNT/tree") ;;
		mounted-j*) fresh_store mounted; t=$(warm_timed "$DOPPEL" import --quiet -j "${v#mounted-j}" "$SRC" "$MNT/tree") ;;
		offline) fresh_store offline; t=$(warm_timed "$DOPPEL" import --quiet --store "$STORE" "$SRC" /tree) ;;
		esac
		log "rep $rep: $v ${t} s"
		results[$v]+="$t "
	done
done
fresh_store offline

cp_med=$(median "${results[cp]}")
echo
echo "Tree: Go $(go env GOVERSION) src ($((files - 1)) files) + ${RANDOM_MIB} MiB random file: $files files, $dirs directories, $(human_bytes "$bytes")."
echo "$(nproc) CPUs, $(uname -r), median of $REPS, commit $(commit_desc), load average $(load_avg)."
echo
echo "| method | seconds (median) | MiB/s | vs cp -a |"
echo "|---|---:|---:|---:|"
for v in "${variants[@]}"; do
	m=$(median "${results[$v]}")
	awk -v name="$v" -v m="$m" -v b="$bytes" -v c="$cp_med" -v all="${results[$v]}" 'BEGIN {
		label = name
		if (name == "cp") label = "cp -a into the mount, then doppel sync"
		else if (name == "mounted") label = "doppel import into the mounted volume"
		else if (name == "offline") label = "doppel import --store (not mounted)"
		else if (name ~ /^mounted-j/) label = "doppel import -j " substr(name, 10) " (mounted)"
		printf "| %s | %.2f (%s) | %.0f | %.2fx |\n", label, m, all, b / 1048576 / m, c / m
	}' | sed 's/ )/)/'
done
