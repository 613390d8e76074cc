#!/usr/bin/env bash
# Quick side-by-side benchmark: doppel vs go-fuse loopback mounts of the
# same disk, plus the native directory as a reference column.
#
#   bench/basic.sh            (or: make bench)
#
# Two loopback references (bench/cmd/loopback, a go-fuse loopback):
#   - passthrough: as go-fuse's example; run as root on Linux >= 6.9 it uses
#     FUSE passthrough, so file data never leaves the kernel
#   - gofuse: the same with kernel passthrough off and 1 MiB requests, so
#     every read and write is served by a Go process (doppel's data path)
#
# Workloads, each repeated BENCH_REPS times (median reported), targets
# interleaved within every repetition:
#   - sequential write of 1 GiB of unique random data, 1 MiB blocks, fsync at
#     the end (fio when installed, else dd from a pre-generated random file)
#   - sequential read of that file, 1 MiB blocks, after an unmount/remount of
#     the FUSE targets and dropping the kernel caches
#   - random 4 KiB writes into that file (fio only): BENCH_RAND_MIB of them,
#     psync at iodepth 1, then libaio with O_DIRECT at iodepth 16 (buffered
#     libaio would be synchronous); fsync at the end, wall time measured
#   - 20,000 files in one directory: create+write 1 KiB, stat, unlink
#     (bench/cmd/fileops; kernel caches dropped between phases)
#
# The doppel daemons' peak RSS (VmHWM) over the whole run is reported too.
# Prints a Markdown table and writes it, with machine details, to
# docs/bench-basic.md.
#
# Environment (defaults in brackets):
#   BENCH_DIR               work directory on a real disk [/var/tmp/doppel-bench]
#   BENCH_REPS              repetitions per workload [3]
#   BENCH_SIZE_MIB          sequential file size in MiB [1024]
#   BENCH_FILES             files for the metadata workload [20000]
#   BENCH_FILE_SIZE         bytes per small file [1024]
#   BENCH_RAND_MIB          MiB written by each random-write workload [256]
#   BENCH_GOFUSE            1 = include the gofuse (no kernel passthrough) column [1]
#   BENCH_TOOL              fio | dd [fio if installed]
#   BENCH_NATIVE            1 = include the native directory column [1]
#   BENCH_REMOUNT           1 = remount FUSE targets before reads [1]
#   BENCH_ONLY_PASSTHROUGH  1 = skip doppel (output then defaults to BENCH_DIR) [0]
#   BENCH_DOPPEL_INIT_ARGS  extra `doppel init` flags, e.g. "--compression off" []
#   BENCH_OUT               Markdown output file [docs/bench-basic.md]
#   BENCH_TIMEOUT           per-command timeout in seconds [1800]
#   BENCH_KEEP              1 = keep the data directories afterwards [0]
set -euo pipefail

LOG_PREFIX=bench
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DOPPEL_REPO_ROOT"

# Remember the exact invocation (BENCH_* overrides included) for the report.
cmdline=""
for v in BENCH_DIR BENCH_REPS BENCH_SIZE_MIB BENCH_FILES BENCH_FILE_SIZE BENCH_RAND_MIB BENCH_GOFUSE BENCH_TOOL \
	BENCH_NATIVE BENCH_REMOUNT BENCH_ONLY_PASSTHROUGH BENCH_DOPPEL_INIT_ARGS BENCH_OUT \
	BENCH_TIMEOUT BENCH_KEEP; do
	if [ -n "${!v+x}" ]; then cmdline+="$v=$(printf '%q' "${!v}") "; fi
done
cmdline+="bench/basic.sh"
[ $# -eq 0 ] || cmdline+=" $*"

BENCH_DIR=$(abspath "${BENCH_DIR:-/var/tmp/doppel-bench}")
REPS=${BENCH_REPS:-3}
SIZE_MIB=${BENCH_SIZE_MIB:-1024}
NFILES=${BENCH_FILES:-20000}
FILE_SIZE=${BENCH_FILE_SIZE:-1024}
RAND_MIB=${BENCH_RAND_MIB:-256}
GOFUSE=${BENCH_GOFUSE:-1}
NATIVE=${BENCH_NATIVE:-1}
REMOUNT=${BENCH_REMOUNT:-1}
ONLY_PT=${BENCH_ONLY_PASSTHROUGH:-0}
INIT_ARGS=${BENCH_DOPPEL_INIT_ARGS:-}
CMD_TIMEOUT=${BENCH_TIMEOUT:-1800}
KEEP=${BENCH_KEEP:-0}
if [ "$ONLY_PT" = 1 ]; then
	OUT=${BENCH_OUT:-$BENCH_DIR/bench-basic.md}
else
	OUT=${BENCH_OUT:-docs/bench-basic.md}
fi
if [ -n "${BENCH_TOOL:-}" ]; then
	TOOL=$BENCH_TOOL
elif command -v fio >/dev/null 2>&1; then
	TOOL=fio
else
	TOOL="dd"
fi

case $TOOL in fio | dd) ;; *) die "BENCH_TOOL must be fio or dd" ;; esac
[ "$TOOL" = dd ] || command -v fio >/dev/null 2>&1 || die "fio not installed (scripts/ensure-deps.sh --bench)"
positive_ints "$REPS" "$SIZE_MIB" "$NFILES" "$FILE_SIZE" "$RAND_MIB" "$CMD_TIMEOUT"
command -v fusermount3 >/dev/null 2>&1 || die "fusermount3 missing (scripts/ensure-deps.sh)"
[ -c /dev/fuse ] || die "/dev/fuse missing"

BIN=$DOPPEL_REPO_ROOT/bin
DOPPEL=$BIN/doppel
LOOPBACK=$BIN/loopback
FILEOPS=$BIN/fileops

# Loopback targets: mount point, backing directory, flags, daemon PID.
declare -A LB_MNT=([passthrough]=$BENCH_DIR/mnt-loopback [gofuse]=$BENCH_DIR/mnt-gofuse)
declare -A LB_ORIG=([passthrough]=$BENCH_DIR/loopback-orig [gofuse]=$BENCH_DIR/gofuse-orig)
declare -A LB_ARGS=([passthrough]="" [gofuse]="-kernel-passthrough=false -max-write 1048576")
declare -A LB_PID=()
D_STORE=$BENCH_DIR/doppel-store
D_MNT=$BENCH_DIR/mnt-doppel
N_DIR=$BENCH_DIR/native
LOGS=$BENCH_DIR/logs
INIT_OUT=""
SRC="" # dd mode: random source file (tmpfs when it fits)

TARGETS=(passthrough)
[ "$GOFUSE" != 1 ] || TARGETS+=(gofuse)
[ "$ONLY_PT" = 1 ] || TARGETS+=(doppel)
[ "$NATIVE" != 1 ] || TARGETS+=(native)

D_PIDS=()
PEAK_RSS_KIB=0 # the doppel daemons' largest VmHWM
CACHES_DROPPED=1

# --- cleanup: always unmount and stop our daemons ------------------------------------
unmount_loopback() { # unmount_loopback TARGET
	local pid=${LB_PID[$1]:-}
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true # the loopback unmounts on SIGTERM
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	LB_PID[$1]=""
	fuse_force_unmount "${LB_MNT[$1]}" || true
}

note_rss() { # remember the doppel daemons' peak RSS before they go
	local p k
	for p in "${D_PIDS[@]}"; do
		k=$(awk '/^VmHWM:/ { print $2 }' "/proc/$p/status" 2>/dev/null) || continue
		[ -z "$k" ] || [ "$k" -le "$PEAK_RSS_KIB" ] || PEAK_RSS_KIB=$k
	done
}

unmount_doppel() {
	note_rss
	doppel_down "$DOPPEL" "$D_STORE" "$D_MNT" "$LOGS/doppel.log"
	D_PIDS=()
}

cleanup() {
	local rc=$?
	set +e
	trap - EXIT INT TERM
	stop_timed
	for t in passthrough gofuse; do
		if [ -n "${LB_PID[$t]:-}" ] || is_mounted "${LB_MNT[$t]}"; then unmount_loopback "$t"; fi
	done
	[ "$ONLY_PT" = 1 ] || unmount_doppel
	[ -z "$SRC" ] || rm -f -- "$SRC"
	if [ "$KEEP" != 1 ]; then
		rm -rf -- "${LB_ORIG[@]}" "$D_STORE" "$N_DIR"
	fi
	if [ "$rc" -ne 0 ]; then
		log "FAILED (exit $rc); logs in $LOGS"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- mounting ----------------------------------------------------------------
mount_loopback() { # mount_loopback TARGET
	local t=$1
	mkdir -p -- "${LB_ORIG[$t]}" "${LB_MNT[$t]}"
	# shellcheck disable=SC2086 # LB_ARGS is a list of flags
	"$LOOPBACK" ${LB_ARGS[$t]} "${LB_MNT[$t]}" "${LB_ORIG[$t]}" >>"$LOGS/loopback-$t.log" 2>&1 &
	LB_PID[$t]=$!
	wait_mounted "${LB_MNT[$t]}" 20 "${LB_PID[$t]}" || die "loopback mount on ${LB_MNT[$t]} failed (see $LOGS/loopback-$t.log)"
}

mount_doppel() {
	doppel_up "$DOPPEL" "$D_STORE" "$D_MNT" "$LOGS/doppel.log"
	mapfile -t D_PIDS < <(doppel_daemon_pids "$DOPPEL" "$D_STORE" "$D_MNT")
	[ ${#D_PIDS[@]} -gt 0 ] || warn "could not identify the doppel daemon process"
}

remount() { # remount TARGET (no-op for native)
	case $1 in
	passthrough | gofuse)
		unmount_loopback "$1"
		mount_loopback "$1"
		;;
	doppel)
		unmount_doppel
		mount_doppel
		;;
	esac
}

workdir() {
	case $1 in
	passthrough | gofuse) echo "${LB_MNT[$1]}" ;;
	doppel) echo "$D_MNT" ;;
	native) echo "$N_DIR" ;;
	esac
}

# --- measuring -------------------------------------------------------------------
declare -A RES # RES[workload|target] = "sec sec sec"

drop() {
	if [ "$CACHES_DROPPED" = 1 ]; then
		drop_caches || CACHES_DROPPED=0
	else
		sync
	fi
}

record() { RES["$1|$2"]+="$3 "; }


gen_source() { # dd mode: fresh random data for every repetition, so nothing dedups
	log "  generating ${SIZE_MIB} MiB of random source data in $SRC"
	dd if=/dev/urandom of="$SRC" bs=1M count="$SIZE_MIB" iflag=fullblock status=none
}

seq_write() { # seq_write TARGET REP
	local t=$1 rep=$2 f sec
	f=$(workdir "$t")/seqfile
	rm -f -- "$f"
	drop
	if [ "$TOOL" = fio ]; then
		timed sec fio --name=seqwrite --filename="$f" --rw=write --bs=1M --size="${SIZE_MIB}M" \
			--ioengine=psync --end_fsync=1 --refill_buffers --randrepeat=0 --fallocate=none \
			--output-format=json --output="$LOGS/fio-write-$t-$rep.json"
	else
		timed sec dd if="$SRC" of="$f" bs=1M conv=fsync status=none
	fi
	record write "$t" "$sec"
	log "  $t: seq write  $(fmt_mibps "$sec")  (${sec}s)"
}

seq_read() { # seq_read TARGET REP
	local t=$1 rep=$2 f sec
	f=$(workdir "$t")/seqfile
	[ "$REMOUNT" != 1 ] || remount "$t"
	drop
	if [ "$TOOL" = fio ]; then
		timed sec fio --name=seqread --filename="$f" --rw=read --bs=1M --size="${SIZE_MIB}M" \
			--ioengine=psync --readonly --output-format=json --output="$LOGS/fio-read-$t-$rep.json"
	else
		timed sec dd if="$f" of=/dev/null bs=1M status=none
	fi
	record read "$t" "$sec"
	log "  $t: seq read   $(fmt_mibps "$sec")  (${sec}s)"
}

# rand_write TARGET REP DEPTH: BENCH_RAND_MIB of 4 KiB writes at random
# offsets of the sequential file, fsync at the end. Depth 1 is psync;
# deeper queues use libaio with O_DIRECT, since buffered libaio submits
# synchronously.
rand_write() {
	local t=$1 rep=$2 depth=$3 f sec engine=(--ioengine=psync)
	f=$(workdir "$t")/seqfile
	[ "$depth" -eq 1 ] || engine=(--ioengine=libaio --direct=1)
	drop
	timed sec fio --name=randwrite --filename="$f" --rw=randwrite --bs=4k --size="${SIZE_MIB}M" \
		--io_size="${RAND_MIB}M" "${engine[@]}" --iodepth="$depth" --end_fsync=1 --refill_buffers \
		--randrepeat=0 --fallocate=none --output-format=json --output="$LOGS/fio-randwrite$depth-$t-$rep.json"
	record "randw$depth" "$t" "$sec"
	log "  $t: random 4 KiB writes, iodepth $depth: $(awk -v s="$sec" -v m="$RAND_MIB" 'BEGIN { printf "%.0f IOPS", m * 256 / s }')  (${sec}s)"
}

drop_seqfile() { # drop_seqfile TARGET
	rm -f -- "$(workdir "$1")/seqfile"
	sync
}

file_ops() { # file_ops TARGET REP
	local t=$1 rep=$2 out c s u drop_flag=()
	drop
	[ "$CACHES_DROPPED" != 1 ] || drop_flag=(-drop-caches)
	out=$(timeout "$CMD_TIMEOUT" "$FILEOPS" -dir "$(workdir "$t")/fileops" -n "$NFILES" -size "$FILE_SIZE" "${drop_flag[@]}")
	printf '%s\n' "$out" >"$LOGS/fileops-$t-$rep.json"
	c=$(json_num create_s <<<"$out")
	s=$(json_num stat_s <<<"$out")
	u=$(json_num unlink_s <<<"$out")
	if [ -z "$c" ] || [ -z "$s" ] || [ -z "$u" ]; then die "cannot parse fileops output: $out"; fi
	record create "$t" "$c"
	record stat "$t" "$s"
	record unlink "$t" "$u"
	log "  $t: $NFILES files: create ${c}s, stat ${s}s, unlink ${u}s"
}

fmt_mibps() { awk -v s="$1" -v m="$SIZE_MIB" 'BEGIN { printf "%.0f MiB/s", m / s }'; }

# --- setup ---------------------------------------------------------------------
mkdir -p -- "$BENCH_DIR" "$LOGS"
fstype=$(stat -f -c %T "$BENCH_DIR")
case $fstype in
tmpfs | ramfs) warn "BENCH_DIR $BENCH_DIR is on $fstype, not a real disk: figures are not representative" ;;
esac
# Leftovers of an interrupted run.
for mp in "${LB_MNT[@]}" "$D_MNT"; do
	if is_mounted "$mp"; then
		warn "unmounting leftover mount $mp"
		fuse_force_unmount "$mp" || die "cannot unmount $mp"
	fi
done
rm -rf -- "${LB_ORIG[@]}" "$D_STORE" "$N_DIR"
rm -f -- "$LOGS"/*
mkdir -p -- "${LB_ORIG[@]}" "$N_DIR"

# Free space: the file exists on one target at a time, but a doppel store may
# keep freed chunks around for a while.
avail_mib=$(df -Pm "$BENCH_DIR" | awk 'NR == 2 { print $4 }')
need_mib=$((SIZE_MIB * (REPS + 2) + 1024))
[ "$avail_mib" -ge "$need_mib" ] || warn "only ${avail_mib} MiB free in $BENCH_DIR; the run may need up to ${need_mib} MiB"

if [ "$TOOL" = dd ]; then
	shm_avail=$(df -Pm /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
	if [ -n "$shm_avail" ] && [ -w /dev/shm ] && [ "$shm_avail" -gt $((SIZE_MIB * 2)) ]; then
		SRC=/dev/shm/doppel-bench-src.$$
	else
		SRC=$BENCH_DIR/src.$$
	fi
fi

log "building bin/loopback, bin/fileops$([ "$ONLY_PT" = 1 ] || echo ", bin/doppel")"
go build -o "$LOOPBACK" ./bench/cmd/loopback
go build -o "$FILEOPS" ./bench/cmd/fileops
if [ "$ONLY_PT" != 1 ]; then
	go build -o "$(dirname "$DOPPEL")/" ./cmd/doppel ./cmd/doppel-core
	log "doppel init --store $D_STORE${INIT_ARGS:+ $INIT_ARGS}"
	# shellcheck disable=SC2086 # INIT_ARGS is a list of flags
	INIT_OUT=$("$DOPPEL" init --store "$D_STORE" $INIT_ARGS 2>&1) ||
		die "doppel init failed: $INIT_OUT"
	printf '%s\n' "$INIT_OUT" >>"$LOGS/doppel.log"
	log "  $INIT_OUT"
fi

log "targets: ${TARGETS[*]}; tool: $TOOL; ${REPS} reps; ${SIZE_MIB} MiB file; ${RAND_MIB} MiB of random writes; ${NFILES} x ${FILE_SIZE} B files; dir: $BENCH_DIR"
mount_loopback passthrough
[ "$GOFUSE" != 1 ] || mount_loopback gofuse
[ "$ONLY_PT" = 1 ] || mount_doppel

# --- run ---------------------------------------------------------------------------
started=$(date +%s)
for ((rep = 1; rep <= REPS; rep++)); do
	log "repetition $rep/$REPS"
	[ "$TOOL" != dd ] || gen_source
	for t in "${TARGETS[@]}"; do
		seq_write "$t" "$rep"
		seq_read "$t" "$rep"
		if [ "$TOOL" = fio ]; then
			rand_write "$t" "$rep" 1
			rand_write "$t" "$rep" 16
		fi
		drop_seqfile "$t"
	done
	for t in "${TARGETS[@]}"; do
		file_ops "$t" "$rep"
	done
done
elapsed=$(($(date +%s) - started))
note_rss
log "measurements done in ${elapsed}s"

# --- report -------------------------------------------------------------------------
# cell WORKLOAD TARGET: "412 MiB/s (2.49 s)", "8,950 ops/s (2.23 s)" or
# "3,120 IOPS (21.0 s)"
cell() {
	local w=$1 t=$2 m
	[ -n "${RES[$w|$t]:-}" ] || { echo "n/a"; return; }
	m=$(median "${RES[$w|$t]}")
	case $w in
	write | read) awk -v s="$m" -v n="$SIZE_MIB" 'BEGIN { printf "%.0f MiB/s (%.2f s)", n / s, s }' ;;
	randw*) awk -v s="$m" -v n="$RAND_MIB" 'BEGIN { printf "%.0f IOPS (%.2f s)", n * 256 / s, s }' ;;
	*) awk -v s="$m" -v n="$NFILES" 'BEGIN { printf "%.0f ops/s (%.2f s)", n / s, s }' ;;
	esac
}
# ratio WORKLOAD REF: doppel throughput / REF throughput = REF time / doppel time
ratio() {
	local w=$1 ref=$2 d p
	if [ -z "${RES[$w|doppel]:-}" ] || [ -z "${RES[$w|$ref]:-}" ]; then
		echo "n/a"
		return
	fi
	d=$(median "${RES[$w|doppel]}")
	p=$(median "${RES[$w|$ref]}")
	awk -v d="$d" -v p="$p" 'BEGIN { printf "%.2f×", p / d }'
}

size_label=$([ "$SIZE_MIB" -ge 1024 ] && [ $((SIZE_MIB % 1024)) -eq 0 ] && echo "$((SIZE_MIB / 1024)) GiB" || echo "$SIZE_MIB MiB")
files_label=$(sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$NFILES")
cold=$([ "$CACHES_DROPPED" = 1 ] && echo ", cold cache")
declare -A LABEL=(
	[write]="Sequential write, $size_label, 1 MiB blocks, fsync at end"
	[read]="Sequential read, $size_label, 1 MiB blocks$cold"
	[randw1]="Random 4 KiB writes, $RAND_MIB MiB into the $size_label file, iodepth 1 (psync), fsync at end"
	[randw16]="Random 4 KiB writes, $RAND_MIB MiB, iodepth 16 (libaio, O_DIRECT), fsync at end"
	[create]="Create + write $FILE_SIZE B + close, $files_label files"
	[stat]="stat, $files_label files$cold"
	[unlink]="unlink, $files_label files$cold"
)

table() {
	local w hdr sep row
	hdr="| Workload | passthrough (kernel passthrough) |"
	sep="|---|---:|"
	if [ "$GOFUSE" = 1 ]; then
		hdr+=" gofuse (data through Go) |"
		sep+="---:|"
	fi
	hdr+=" doppel | doppel / passthrough |"
	sep+="---:|---:|"
	if [ "$GOFUSE" = 1 ]; then
		hdr+=" doppel / gofuse |"
		sep+="---:|"
	fi
	if [ "$NATIVE" = 1 ]; then
		hdr+=" native (no FUSE) |"
		sep+="---:|"
	fi
	echo "$hdr"
	echo "$sep"
	for w in write read randw1 randw16 create stat unlink; do
		[ -n "${RES[$w|passthrough]:-}" ] || continue
		row="| ${LABEL[$w]} | $(cell "$w" passthrough) |"
		[ "$GOFUSE" != 1 ] || row+=" $(cell "$w" gofuse) |"
		row+=" $(cell "$w" doppel) | $(ratio "$w" passthrough) |"
		[ "$GOFUSE" != 1 ] || row+=" $(ratio "$w" gofuse) |"
		[ "$NATIVE" != 1 ] || row+=" $(cell "$w" native) |"
		echo "$row"
	done
	if [ "$ONLY_PT" != 1 ]; then
		echo
		echo "doppel daemons' peak RSS (VmHWM) over the whole run: $((PEAK_RSS_KIB / 1024)) MiB"
	fi
}

mem_gib=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
os=$( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null || echo unknown)
disk=$(findmnt -n -o FSTYPE,SOURCE --target "$BENCH_DIR" 2>/dev/null | awk '{ print $1 " on " $2 }')
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "no commit")
[ -z "$(git status --porcelain 2>/dev/null | head -1)" ] || commit+=" (with uncommitted changes)"
tool_desc=$([ "$TOOL" = fio ] && fio --version || echo "dd ($(dd --version | head -1))")

report() {
	echo "# Basic benchmark: doppel vs go-fuse loopback"
	echo
	echo "Generated by \`bench/basic.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'); $([ "$REPS" -eq 1 ] && echo "single run" || echo "median of $REPS runs")."
	echo
	table
	echo
	echo "The ratio columns are doppel's throughput divided by the reference's"
	echo "(equivalently reference time / doppel time): above 1× doppel is faster,"
	echo "below 1× it is slower. Times in parentheses are the median wall-clock time"
	echo "of the whole operation."
	echo
	echo "- **passthrough**: \`bench/cmd/loopback\`, a go-fuse loopback (\`fs.NewLoopbackRoot\`, same"
	echo "  go-fuse version as doppel, go-fuse's default options, as its example/loopback) forwarding to a"
	echo "  directory on the same disk. Run as root on Linux 6.9 or later, its open files use FUSE"
	echo "  passthrough: the kernel reads and writes the backing file itself, and file data never"
	echo "  reaches the Go process. Only metadata operations go through it."
	[ "$GOFUSE" != 1 ] || echo "- **gofuse**: the same loopback with \`-kernel-passthrough=false -max-write 1048576\`: every read and write is served by the Go process, with doppel's request size. This is the data path of any FUSE file system that transforms data."
	if [ "$ONLY_PT" = 1 ]; then
		echo "- **doppel**: not measured (BENCH_ONLY_PASSTHROUGH=1)."
	else
		local said=""
		[ -z "$INIT_OUT" ] || said="; init reported: $(tr '\n' ' ' <<<"$INIT_OUT" | sed 's/ *$//')"
		echo "- **doppel**: a fresh volume (\`doppel init --store DIR${INIT_ARGS:+ $INIT_ARGS}\`) on the same disk$said."
	fi
	[ "$NATIVE" != 1 ] || echo "- **native**: the same disk without FUSE, for reference."
	echo "- Sequential I/O uses $([ "$TOOL" = fio ] && echo "fio (\`--ioengine=psync --bs=1M\`, writes with \`--refill_buffers --end_fsync=1\`: unique random data)" || echo "dd (\`bs=1M\`, writes from a fresh random file per repetition with \`conv=fsync\`)")."
	echo "  Before each read the FUSE targets are $([ "$REMOUNT" = 1 ] && echo "unmounted and remounted and" || echo "not remounted;") the kernel caches are $([ "$CACHES_DROPPED" = 1 ] && echo "dropped" || echo "**not** dropped (not root)")."
	[ "$TOOL" != fio ] || echo "- Random writes: fio \`--rw=randwrite --bs=4k --io_size=${RAND_MIB}M --end_fsync=1 --refill_buffers\` into the sequential file, after its read; iodepth 1 with \`--ioengine=psync\`, iodepth 16 with \`--ioengine=libaio --direct=1\` (buffered libaio is synchronous). IOPS = writes / wall time, fsync included."
	echo "- Small files: \`bench/cmd/fileops\`, one directory, sequential, single-threaded;"
	echo "  kernel caches $([ "$CACHES_DROPPED" = 1 ] && echo "dropped" || echo "**not** dropped") between the create, stat and unlink phases."
	echo
	echo "## Machine"
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| CPU | ${cpu:-unknown}, $(nproc) cores (nproc) |"
	echo "| Memory | $mem_gib |"
	echo "| Kernel | $(uname -sr) |"
	echo "| OS | $os |"
	echo "| Go | $(go version | sed 's/^go version //') |"
	echo "| Disk (BENCH_DIR) | ${disk:-$fstype} |"
	echo "| FUSE | $(fusermount3 --version 2>&1 | head -1) |"
	echo "| I/O tool | $tool_desc |"
	echo "| doppel commit | $commit |"
	echo "| Date | $(date -u '+%Y-%m-%d %H:%M:%S UTC') |"
	echo "| Duration | ${elapsed}s |"
	echo
	echo "Command (from the repository root, after \`make build\`; \`make bench\` runs it too):"
	echo
	echo '```sh'
	echo "$cmdline"
	echo '```'
}

mkdir -p -- "$(dirname "$OUT")"
report >"$OUT"
echo
table
echo
log "report written to $OUT"
