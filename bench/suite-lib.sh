# shellcheck shell=bash
# Helpers of the issue-4 suite (bench/suite.sh), on top of bench/lib.sh,
# which it sources (timing, medians, doppel daemons). Source it, do not
# run it.
#
# The targets, each a directory the workloads run in (target_dir):
#   passthrough  go-fuse's example loopback over $LB_ORIG, mounted on $LB_MNT
#   doppel       a doppel volume ($D_STORE) mounted on $D_MNT
#   native       the plain directory $N_DIR on the same disk
#   btrfs, xfs   an image file in $BENCH_DIR on a loop device (bench/loopfs.sh),
#                mounted on $BENCH_DIR/mnt-TYPE
#
# Call bench_paths once BENCH_DIR is set; bench_teardown (from the caller's
# EXIT trap) unmounts everything this shell mounted and stops its daemons.

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=bench/loopfs.sh
. "$(dirname "${BASH_SOURCE[0]}")/loopfs.sh"

CMD_TIMEOUT=${CMD_TIMEOUT:-1800} # seconds, for every timed command
CACHES_DROPPED=1                 # 0 once dropping the caches was refused
LB_PID=""
D_PIDS=()
D_PEAK_KIB=0 # highest VmHWM seen of any doppel daemon this run

bench_paths() {
	BIN=$DOPPEL_REPO_ROOT/bin
	DOPPEL=$BIN/doppel
	LOOPBACK=$BIN/loopback
	FILEOPS=$BIN/fileops
	LB_ORIG=$BENCH_DIR/loopback-orig
	LB_MNT=$BENCH_DIR/mnt-loopback
	D_STORE=$BENCH_DIR/doppel-store
	D_MNT=$BENCH_DIR/mnt-doppel
	N_DIR=$BENCH_DIR/native
	LOGS=$BENCH_DIR/logs
}

bench_require_fuse() {
	command -v fusermount3 >/dev/null 2>&1 || die "fusermount3 missing (scripts/ensure-deps.sh)"
	[ -c /dev/fuse ] || die "/dev/fuse missing"
}

# bench_build TOOL...: builds the named tools into bin/: doppel, loopback
# (go-fuse's example passthrough, the go-fuse version of go.mod), fileops,
# benchreport.
bench_build() {
	local tool
	log "building $(printf 'bin/%s ' "$@")"
	for tool in "$@"; do
		case $tool in
		doppel) go build -o "$(dirname "$DOPPEL")/" ./cmd/doppel ./cmd/doppel-core ;;
		loopback) go build -o "$LOOPBACK" github.com/hanwen/go-fuse/v2/example/loopback ;;
		fileops | benchreport) go build -o "$BIN/$tool" "./bench/cmd/$tool" ;;
		*) die "bench_build: unknown tool $tool" ;;
		esac
	done
}

# --- passthrough: the go-fuse loopback example -------------------------------------
mount_loopback() {
	mkdir -p -- "$LB_ORIG" "$LB_MNT"
	"$LOOPBACK" -q "$LB_MNT" "$LB_ORIG" >>"$LOGS/loopback.log" 2>&1 &
	LB_PID=$!
	wait_mounted "$LB_MNT" 20 "$LB_PID" || die "loopback mount on $LB_MNT failed (see $LOGS/loopback.log)"
}

unmount_loopback() {
	if [ -n "$LB_PID" ] && kill -0 "$LB_PID" 2>/dev/null; then
		kill -TERM "$LB_PID" 2>/dev/null || true # the loopback unmounts on SIGTERM
		for _ in $(seq 1 100); do kill -0 "$LB_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$LB_PID" 2>/dev/null || true
		wait "$LB_PID" 2>/dev/null || true
	fi
	LB_PID=""
	fuse_force_unmount "$LB_MNT" || true
}

# --- doppel -------------------------------------------------------------------------
mount_doppel() {
	doppel_up "$DOPPEL" "$D_STORE" "$D_MNT" "$LOGS/doppel.log"
	mapfile -t D_PIDS < <(doppel_daemon_pids "$DOPPEL" "$D_STORE" "$D_MNT")
	[ ${#D_PIDS[@]} -gt 0 ] || warn "could not identify the doppel daemon process"
}

# doppel_sample_hwm: raises D_PEAK_KIB to the running daemon's peak resident
# set (VmHWM, KiB, kept by the kernel since the daemon started). Called
# before every unmount, so D_PEAK_KIB covers all daemons since the caller
# last reset it.
doppel_sample_hwm() {
	local p k
	for p in "${D_PIDS[@]}"; do
		k=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$p/status" 2>/dev/null) || continue
		[ -z "$k" ] || [ "$k" -le "$D_PEAK_KIB" ] || D_PEAK_KIB=$k
	done
}

unmount_doppel() {
	doppel_sample_hwm
	doppel_down "$DOPPEL" "$D_STORE" "$D_MNT" "$LOGS/doppel.log"
	D_PIDS=()
}

# doppel_init [FLAG...]: a fresh volume in $D_STORE; prints what init said.
doppel_init() {
	local out
	out=$("$DOPPEL" init --store "$D_STORE" "$@" 2>&1) || die "doppel init failed: $out"
	printf '%s\n' "$out" >>"$LOGS/doppel.log"
	printf '%s\n' "$out"
}

# --- targets --------------------------------------------------------------------------
target_dir() {
	case $1 in
	passthrough) echo "$LB_MNT" ;;
	doppel) echo "$D_MNT" ;;
	native) echo "$N_DIR" ;;
	btrfs | xfs) loopfs_mnt "$1" ;;
	*) die "unknown target $1" ;;
	esac
}

# target_remount TARGET: unmount and mount again, so that nothing of the
# file system's state stays cached in the daemon or the kernel (no-op for
# native).
target_remount() {
	case $1 in
	passthrough) unmount_loopback && mount_loopback ;;
	doppel) unmount_doppel && mount_doppel ;;
	btrfs | xfs) loopfs_unmount "$1" && loopfs_mount "$1" ;;
	esac
}

# bench_teardown: unmount every target this shell set up; for EXIT traps.
bench_teardown() {
	local type
	if [ -n "$LB_PID" ] || is_mounted "$LB_MNT"; then unmount_loopback; fi
	if [ ${#D_PIDS[@]} -gt 0 ] || is_mounted "$D_MNT"; then unmount_doppel; fi
	for type in "${!LOOPDEV[@]}"; do loopfs_destroy "$type"; done
}

# bench_clear_leftovers: unmount what an interrupted earlier run left behind.
bench_clear_leftovers() {
	local mp
	for mp in "$LB_MNT" "$D_MNT"; do
		if is_mounted "$mp"; then
			warn "unmounting leftover mount $mp"
			fuse_force_unmount "$mp" || die "cannot unmount $mp"
		fi
	done
	for mp in btrfs xfs; do
		[ ! -e "$(loopfs_image "$mp")" ] || loopfs_destroy "$mp"
	done
}

# --- measuring --------------------------------------------------------------------------
# drop: flush, then drop the kernel caches when permitted (sync only otherwise).
drop() {
	if [ "$CACHES_DROPPED" = 1 ]; then
		drop_caches || CACHES_DROPPED=0
	else
		sync
	fi
}

# fileops_run DIR N SIZE JSONLOG: the create / stat / unlink phases of
# bench/cmd/fileops in DIR (kernel caches dropped between phases when
# permitted); sets FO_CREATE, FO_STAT and FO_UNLINK (seconds).
fileops_run() {
	local dir=$1 n=$2 size=$3 log=$4 out drop_flag=()
	drop
	[ "$CACHES_DROPPED" != 1 ] || drop_flag=(-drop-caches)
	out=$(timeout --foreground "$CMD_TIMEOUT" "$FILEOPS" -dir "$dir" -n "$n" -size "$size" "${drop_flag[@]}")
	printf '%s\n' "$out" >"$log"
	FO_CREATE=$(json_num create_s <<<"$out")
	FO_STAT=$(json_num stat_s <<<"$out")
	FO_UNLINK=$(json_num unlink_s <<<"$out")
	if [ -z "$FO_CREATE" ] || [ -z "$FO_STAT" ] || [ -z "$FO_UNLINK" ]; then
		die "cannot parse fileops output: $out"
	fi
}

# machine_rows: Markdown table rows describing the machine and the tools.
machine_rows() {
	local cpu os disk commit
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	os=$( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null || echo unknown)
	disk=$(findmnt -n -o FSTYPE,SOURCE --target "$BENCH_DIR" 2>/dev/null | awk '{ print $1 " on " $2 }')
	commit=$(git -C "$DOPPEL_REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")
	[ -z "$(git -C "$DOPPEL_REPO_ROOT" status --porcelain 2>/dev/null | head -1)" ] || commit+=" (with uncommitted changes)"
	echo "| CPU | ${cpu:-unknown}, $(nproc) cores (nproc) |"
	echo "| Memory | $(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) |"
	echo "| Kernel | $(uname -sr) |"
	echo "| OS | $os |"
	echo "| Go | $(go version | sed 's/^go version //') |"
	echo "| Disk (BENCH_DIR) | ${disk:-$(stat -f -c %T "$BENCH_DIR")} |"
	echo "| FUSE | $(fusermount3 --version 2>&1 | head -1) |"
	echo "| doppel commit | $commit |"
}
