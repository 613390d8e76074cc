# shellcheck shell=bash
# Helpers shared by bench/*.sh (on top of scripts/lib.sh, which it
# sources). Source it, do not run it.

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

# bench_cmdline SCRIPT [ARGS...]: the invocation, with every BENCH_*
# variable set in the environment, to quote in a report. Call it before
# the script assigns defaults to BENCH_* variables.
bench_cmdline() {
	local v out=""
	for v in $(compgen -v BENCH_); do
		out+="$v=$(printf '%q' "${!v}") "
	done
	out+=$1
	shift
	[ $# -eq 0 ] || out+=" $*"
	printf '%s\n' "$out"
}

# positive_ints VALUE...: dies unless every VALUE is a positive integer.
positive_ints() {
	local n
	for n in "$@"; do
		[[ $n =~ ^[1-9][0-9]*$ ]] || die "numeric BENCH_* setting expected, got '$n'"
	done
}

# median "V V V...": the median of the numbers (mean of the middle two
# for an even count); fails on an empty list.
median() {
	# shellcheck disable=SC2086 # word splitting intended
	printf '%s\n' $1 | sort -g | awk '{ a[NR] = $1 } END {
		if (NR == 0) exit 1
		if (NR % 2) print a[(NR + 1) / 2]; else printf "%.6f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

# json_num KEY < JSON: the first number stored under KEY, in compact or
# indented JSON.
json_num() {
	sed -n 's/.*"'"$1"'": *\([-+0-9.eE]*\).*/\1/p' | head -n 1
}

# secs T0_NS T1_NS: seconds between two now_ns readings.
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", (b - a) / 1e9 }'; }

# timed OUTVAR CMD...: runs CMD, under a timeout of CMD_TIMEOUT seconds
# [1800] unless it is a shell function, stores the elapsed seconds in
# OUTVAR and returns CMD's status. CMD runs in the background while the
# script waits for it, so that a signal's trap runs at once; the trap
# should call stop_timed.
TIMED_PID=""
timed() {
	local -n _out=$1
	shift
	local t0 t1 rc=0 limit=(timeout "${CMD_TIMEOUT:-1800}")
	! declare -F "$1" >/dev/null || limit=()
	# bash's own clock: $(now_ns) would fork a subshell and date, a few
	# ms that millisecond commands (doppel clone) would be charged.
	t0=${EPOCHREALTIME//[!0-9]/}
	"${limit[@]}" "$@" <&0 &
	TIMED_PID=$!
	wait "$TIMED_PID" || rc=$?
	TIMED_PID=""
	t1=${EPOCHREALTIME//[!0-9]/}
	_out=$(secs "${t0}000" "${t1}000")
	return "$rc"
}

# stop_timed: ends the command timed is waiting for, if any.
stop_timed() {
	[ -n "$TIMED_PID" ] || return 0
	kill -TERM "$TIMED_PID" 2>/dev/null || true
	wait "$TIMED_PID" 2>/dev/null || true
	TIMED_PID=""
}

# --- doppel daemons ---------------------------------------------------------------

# busy_cpu: the machine's busy CPU seconds so far (user, nice, system,
# irq, softirq of every core).
busy_cpu() { awk '/^cpu /{ printf "%.2f", ($2+$3+$4+$7+$8)/100 }' /proc/stat; }

# proc_cpu PID: the CPU seconds (user + system) process PID has used.
proc_cpu() { awk '{ printf "%.2f", ($14+$15)/100 }' "/proc/$1/stat" 2>/dev/null || echo 0; }

# sub A B: B - A, two decimals.
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# doppel_daemon_pids DOPPEL STORE MNT: PIDs of the DOPPEL binary's
# processes that serve STORE or MNT.
doppel_daemon_pids() {
	local exe p x
	exe=$(dirname "$(abspath "$1")")/doppel-core # doppel hands mount to it
	for p in /proc/[0-9]*; do
		x=$(readlink "$p/exe" 2>/dev/null) || continue
		[ "${x% (deleted)}" = "$exe" ] || continue
		tr '\0' '\n' <"$p/cmdline" 2>/dev/null | grep -qF -e "$2" -e "$3" || continue
		echo "${p#/proc/}"
	done
}

# doppel_up DOPPEL STORE MNT LOG: mounts the volume of STORE on MNT.
doppel_up() {
	local doppel=$1 store=$2 mnt=$3 logf=$4
	mkdir -p -- "$mnt"
	timeout 120 "$doppel" mount --store "$store" "$mnt" >>"$logf" 2>&1 ||
		die "doppel mount $mnt failed (see $logf)"
	wait_mounted "$mnt" 20 || die "doppel mount returned but $mnt is not mounted"
}

# doppel_down DOPPEL STORE MNT LOG: unmounts MNT and makes sure the
# daemon serving it is gone (killing it as a last resort).
doppel_down() {
	local doppel=$1 store=$2 mnt=$3 logf=$4 p pids
	pids=$(doppel_daemon_pids "$doppel" "$store" "$mnt")
	if is_mounted "$mnt"; then
		timeout 300 "$doppel" umount "$mnt" >>"$logf" 2>&1 ||
			warn "doppel umount $mnt failed (see $logf)"
	fi
	fuse_force_unmount "$mnt" || true
	for p in $pids; do
		for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$p" 2>/dev/null; then
			warn "doppel daemon $p still running after unmount; killing it"
			kill -TERM "$p" 2>/dev/null || true
			sleep 1
			kill -KILL "$p" 2>/dev/null || true
		fi
	done
}

# --- NBD servers ----------------------------------------------------------------------

# qemu_nbd_start RAW PORT LOG: qemu-nbd serving raw file RAW as export
# "disk" on 127.0.0.1:PORT, in the background ($! is its pid). -t: stay up
# across connections; --shared: fio's and nbdcopy's several connections;
# writeback cache, the default, as a user runs it.
qemu_nbd_start() {
	qemu-nbd -f raw -t --shared=16 -x disk -b 127.0.0.1 -p "$2" \
		--discard=unmap "$1" >>"$3" 2>&1 &
}

# nbd_wait PORT LOG: until export "disk" on 127.0.0.1:PORT answers (10 s).
nbd_wait() {
	local i
	for i in $(seq 100); do
		if nbdinfo --size "nbd://127.0.0.1:$1/disk" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	die "no NBD server on port $1 (see $2)"
}

# --- file systems in loop-mounted image files -------------------------------------

declare -A LOOPFS_DEV # mount point -> loop device, for loopfs_down

# loopfs_up TYPE IMAGE SIZE_MIB MNT: makes a fresh xfs (with reflink) or
# btrfs file system in the sparse file IMAGE and mounts it on MNT.
loopfs_up() {
	local type=$1 img=$2 mib=$3 mnt=$4 dev
	rm -f -- "$img"
	truncate -s "${mib}M" "$img"
	case $type in
	xfs) mkfs.xfs -q -m reflink=1 "$img" ;;
	btrfs) mkfs.btrfs -q "$img" >/dev/null ;;
	*) die "loopfs_up: unknown file system $type" ;;
	esac
	dev=$(as_root losetup -f --show "$img") || die "losetup $img failed"
	LOOPFS_DEV[$mnt]=$dev
	mkdir -p -- "$mnt"
	as_root mount "$dev" "$mnt" || die "mounting $dev ($img) on $mnt failed"
}

# loopfs_down MNT: unmounts MNT and detaches its loop device.
loopfs_down() {
	local mnt=$1 dev=${LOOPFS_DEV[$1]:-}
	if is_mounted "$mnt"; then
		as_root umount "$mnt" 2>/dev/null || as_root umount -l "$mnt" || warn "cannot unmount $mnt"
	fi
	if [ -n "$dev" ]; then
		as_root losetup -d "$dev" || warn "cannot detach $dev"
	fi
	unset 'LOOPFS_DEV[$mnt]'
}

# loopfs_down_all: loopfs_down for every file system loopfs_up mounted.
loopfs_down_all() {
	local mnt
	for mnt in "${!LOOPFS_DEV[@]}"; do loopfs_down "$mnt"; done
}

# --- reports ---------------------------------------------------------------------------

load_avg() { cut -d' ' -f1-3 /proc/loadavg; }

# commit_desc: the checked-out commit, flagged when the tree is dirty.
commit_desc() {
	local c
	c=$(git -C "$DOPPEL_REPO_ROOT" rev-parse --short HEAD 2>/dev/null || echo "no commit")
	[ -z "$(git -C "$DOPPEL_REPO_ROOT" status --porcelain 2>/dev/null | head -1)" ] || c+=" (with uncommitted changes)"
	printf '%s\n' "$c"
}

# bench_start: notes the start of the measurements, the load average
# then and the commit measured, for machine_section.
bench_start() {
	RUN_STARTED=$(date +%s)
	RUN_LOAD=$(load_avg)
	RUN_COMMIT=$(commit_desc)
}

# machine_section DIR CMDLINE HOW [ROW...]: the report's "Machine"
# section: a table describing the machine and the run since bench_start
# (DIR is the benchmark's disk) with the caller's extra rows (Markdown
# "| name | value |"), then the command CMDLINE that reproduces the run
# and HOW to run it.
machine_section() {
	local dir=$1 cmdline=$2 how=$3 cpu os disk
	shift 3
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	os=$( (. /etc/os-release && echo "$PRETTY_NAME") 2>/dev/null || echo unknown)
	disk=$(findmnt -n -o FSTYPE,SOURCE --target "$dir" 2>/dev/null | awk '{ print $1 " on " $2 }')
	echo "## Machine"
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| CPU | ${cpu:-unknown}, $(nproc) cores (nproc) |"
	echo "| Memory | $(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) |"
	echo "| Kernel | $(uname -sr) |"
	echo "| OS | $os |"
	echo "| Go | $(go version | sed 's/^go version //') |"
	echo "| Disk (BENCH_DIR) | ${disk:-$(stat -f -c %T "$dir")} |"
	echo "| FUSE | $(fusermount3 --version 2>&1 | head -1) |"
	echo "| doppel commit | $RUN_COMMIT |"
	[ $# -eq 0 ] || printf '%s\n' "$@"
	echo "| Load average (1/5/15 min) | $RUN_LOAD at the start, $(load_avg) at the end |"
	echo "| Date | $(date -u '+%Y-%m-%d %H:%M:%S UTC') |"
	echo "| Duration | $(($(date +%s) - RUN_STARTED))s |"
	echo
	echo "Command (from the repository root, $how):"
	echo
	echo '```sh'
	echo "$cmdline"
	echo '```'
}
