#!/usr/bin/env bash
# Diff and scan between clones (issue 5), side by side with the tools a
# user would use otherwise:
#   - diff: a clone of an N-file tree with C files changed in it, compared
#     with its origin by `doppel diff`, `diff -rq` and `rsync -rcn --delete`
#     (checksums, dry run), all on the same mount;
#   - scan: K clones of one tree scanned with `doppel scan -- md5sum {}`
#     against `md5sum` over K plain copies (made with cp -a into the same
#     volume: the copies share chunks, as dedup does, but are separate
#     files, so a per-file scanner reads each).
#
#   bench/diffscan.sh      (or: make bench-diffscan)
#
# Environment: BENCH_DIR [/var/tmp/doppel-bench-diffscan], BENCH_FILES
# [100000], BENCH_CHANGES [100], BENCH_CLONES [8], BENCH_SCAN_FILES [10000],
# BENCH_REPS [3]. Prints a Markdown table.
set -euo pipefail

LOG_PREFIX=bench-diffscan
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DOPPEL_REPO_ROOT"

BENCH_DIR=$(abspath "${BENCH_DIR:-/var/tmp/doppel-bench-diffscan}")
FILES=${BENCH_FILES:-100000}
CHANGES=${BENCH_CHANGES:-100}
CLONES=${BENCH_CLONES:-8}
SCAN_FILES=${BENCH_SCAN_FILES:-10000}
REPS=${BENCH_REPS:-3}
DOPPEL=$DOPPEL_REPO_ROOT/bin/doppel
STORE=$BENCH_DIR/store
MNT=$BENCH_DIR/mnt
SRC=$BENCH_DIR/src
LOGS=$BENCH_DIR/logs

cleanup() {
	local rc=$?
	if is_mounted "$MNT"; then
		timeout 300 "$DOPPEL" umount "$MNT" >>"$LOGS/doppel.log" 2>&1 || fuse_force_unmount "$MNT"
	fi
	rm -rf -- "$STORE"
	[ "$rc" -eq 0 ] || log "FAILED (exit $rc); logs in $LOGS"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

command -v rsync >/dev/null || as_root apt-get install -y rsync >/dev/null
mkdir -p -- "$BENCH_DIR" "$LOGS" "$MNT"
log "building bin/doppel"
go build -o "$(dirname "$DOPPEL")/" ./cmd/doppel ./cmd/doppel-core

# make_tree DIR N: N small files, 1,000 per directory.
make_tree() {
	local dir=$1 n=$2
	rm -rf -- "$dir"
	mkdir -p -- "$dir"
	python3 - "$dir" "$n" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    d = os.path.join(root, "d%04d" % (i // 1000))
    if i % 1000 == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%06d.txt" % i), "w") as f:
        f.write("file %d\n" % i * (1 + i % 7))
PY
}

seconds() { # seconds CMD...: wall time of CMD, its output to the run log
	local t0 t1
	t0=$(now_ns)
	"$@" >>"$LOGS/run.log" 2>&1 || true
	t1=$(now_ns)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", (b - a) / 1e9 }'
}

log "making a $FILES-file tree and importing it"
make_tree "$SRC" "$FILES"
rm -rf -- "$STORE"
"$DOPPEL" init --store "$STORE" >>"$LOGS/doppel.log"
"$DOPPEL" mount --store "$STORE" "$MNT" >>"$LOGS/doppel.log" 2>&1 || die "mount failed"
"$DOPPEL" import --quiet "$SRC" "$MNT/tree" >>"$LOGS/doppel.log" 2>&1

log "clone, then change $CHANGES files in the clone"
"$DOPPEL" clone "$MNT/tree" "$MNT/work" >>"$LOGS/run.log"
step=$((FILES / CHANGES))
for ((i = 0; i < CHANGES; i++)); do
	n=$((i * step))
	printf 'changed %d\n' "$i" >>"$MNT/work/d$(printf %04d $((n / 1000)))/f$(printf %06d "$n").txt"
done
"$DOPPEL" sync "$MNT"
got=$("$DOPPEL" diff "$MNT/tree" "$MNT/work" | wc -l)
[ "$got" -eq "$CHANGES" ] || die "doppel diff found $got entries, want $CHANGES"

declare -A t
for rep in $(seq 1 "$REPS"); do
	sync; echo 3 >/proc/sys/vm/drop_caches
	t[doppel]+="$(seconds "$DOPPEL" diff "$MNT/tree" "$MNT/work") "
	t[full]+="$(seconds "$DOPPEL" diff --full "$MNT/tree" "$MNT/work") "
	sync; echo 3 >/proc/sys/vm/drop_caches
	t[diffrq]+="$(seconds diff -rq "$MNT/tree" "$MNT/work") "
	sync; echo 3 >/proc/sys/vm/drop_caches
	t[rsync]+="$(seconds rsync -rcn --delete "$MNT/tree/" "$MNT/work/") "
	log "diff rep $rep: ${t[doppel]} | ${t[full]} | ${t[diffrq]} | ${t[rsync]}"
done

log "scan: $CLONES clones and $CLONES copies of a $SCAN_FILES-file tree"
make_tree "$SRC.scan" "$SCAN_FILES"
"$DOPPEL" import --quiet "$SRC.scan" "$MNT/scan" >>"$LOGS/doppel.log" 2>&1
mkdir -p "$MNT/clones" "$MNT/copies"
clones=() copies=()
for ((k = 0; k < CLONES; k++)); do
	"$DOPPEL" clone --lazy "$MNT/scan" "$MNT/clones/c$k" >>"$LOGS/run.log"
	cp -a "$MNT/scan" "$MNT/copies/c$k"
	clones+=("$MNT/clones/c$k") copies+=("$MNT/copies/c$k")
done
"$DOPPEL" sync "$MNT"
for rep in $(seq 1 "$REPS"); do
	sync; echo 3 >/proc/sys/vm/drop_caches
	t[scan]+="$(seconds "$DOPPEL" scan "${clones[@]}" -- md5sum {}) "
	sync; echo 3 >/proc/sys/vm/drop_caches
	t[md5]+="$(seconds find "${copies[@]}" -type f -exec md5sum {} \;) "
	log "scan rep $rep: ${t[scan]} | ${t[md5]}"
done

scan_runs=$("$DOPPEL" scan "${clones[@]}" -- true | tail -1 | awk '{ print $3 }')
copy_files=$(find "${copies[@]}" -type f | wc -l)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", a / b }'; }
d=$(median "${t[doppel]}") f=$(median "${t[full]}")
q=$(median "${t[diffrq]}") r=$(median "${t[rsync]}")
s=$(median "${t[scan]}") m=$(median "${t[md5]}")
echo
echo "| diff of a $FILES-file clone with $CHANGES changed files | seconds (median of $REPS) | vs doppel diff |"
echo "|---|---:|---:|"
echo "| \`doppel diff\` (journal since the clone) | $d | 1× |"
echo "| \`doppel diff --full\` (both trees walked, chunk identity) | $f | $(ratio "$f" "$d")× |"
echo "| \`diff -rq\` | $q | $(ratio "$q" "$d")× |"
echo "| \`rsync -rcn --delete\` | $r | $(ratio "$r" "$d")× |"
echo
echo "| scan of $CLONES × $SCAN_FILES files | seconds (median of $REPS) | runs of md5sum |"
echo "|---|---:|---:|"
echo "| \`doppel scan\` of $CLONES lazy clones | $s | $scan_runs |"
echo "| \`md5sum\` over $CLONES copies | $m | $copy_files |"
echo
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); commit $(git rev-parse --short HEAD)"
