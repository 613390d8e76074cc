# shellcheck shell=bash
# Shared helpers for scripts/*.sh and bench/*.sh. Source it, do not run it.

# Repository root (the directory containing this scripts/ directory).
DOPPEL_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export DOPPEL_REPO_ROOT

: "${LOG_PREFIX:=doppel}"

# With LOG_T0 set (seconds since the epoch, e.g. LOG_T0=$(date +%s)), every
# line also shows the time elapsed since then, so long runs show progress.
_log_tag() {
	if [ -n "${LOG_T0:-}" ]; then
		local s=$(($(date +%s) - LOG_T0))
		printf '%s +%d:%02d:%02d' "$LOG_PREFIX" $((s / 3600)) $((s / 60 % 60)) $((s % 60))
	else
		printf '%s' "$LOG_PREFIX"
	fi
}
log() { printf '[%s] %s\n' "$(_log_tag)" "$*" >&2; }
warn() { printf '[%s] WARNING: %s\n' "$(_log_tag)" "$*" >&2; }
die() {
	printf '[%s] ERROR: %s\n' "$(_log_tag)" "$*" >&2
	exit 1
}

# Run a command as root: directly when root, via sudo when available.
as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root to run: $* (not root and sudo is not installed)"
	fi
}

# Absolute, canonical form of a path that may not exist yet.
abspath() {
	local p=$1
	if [ -e "$p" ]; then
		(cd "$p" 2>/dev/null && pwd -P) || realpath -m -- "$p"
	else
		realpath -m -- "$p"
	fi
}

# Mount point as written in /proc/self/mountinfo (octal escapes for
# space, tab, newline and backslash).
_mountinfo_escape() {
	local s=$1
	s=${s//\\/\\134}
	s=${s// /\\040}
	s=${s//$'\t'/\\011}
	s=${s//$'\n'/\\012}
	printf '%s' "$s"
}

# mount_entry MOUNTPOINT: prints "FSTYPE SOURCE" of the topmost mount on
# MOUNTPOINT; returns 1 if nothing is mounted there.
mount_entry() {
	local mp
	mp=$(_mountinfo_escape "$(abspath "$1")")
	awk -v mp="$mp" '
		$5 == mp {
			for (i = 7; i <= NF; i++) if ($i == "-") break
			ent = $(i + 1) " " $(i + 2); found = 1
		}
		END { if (!found) exit 1; print ent }
	' /proc/self/mountinfo
}

is_mounted() { mount_entry "$1" >/dev/null; }

# wait_mounted MOUNTPOINT [TIMEOUT_SECONDS] [PID]: waits until something is
# mounted on MOUNTPOINT. Fails early if PID (the mounting daemon) exits.
wait_mounted() {
	local mp=$1 timeout=${2:-20} pid=${3:-} i
	for ((i = 0; i < timeout * 10; i++)); do
		if is_mounted "$mp"; then
			return 0
		fi
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			return 1
		fi
		sleep 0.1
	done
	return 1
}

wait_unmounted() {
	local mp=$1 timeout=${2:-20} i
	for ((i = 0; i < timeout * 10; i++)); do
		is_mounted "$mp" || return 0
		sleep 0.1
	done
	return 1
}

# Last-resort lazy unmount of a FUSE mount.
fuse_force_unmount() {
	local mp=$1
	is_mounted "$mp" || return 0
	if command -v fusermount3 >/dev/null 2>&1; then
		fusermount3 -u -z "$mp" 2>/dev/null || true
	fi
	if is_mounted "$mp"; then
		as_root umount -l "$mp" 2>/dev/null || true
	fi
	wait_unmounted "$mp" 5
}

# True when the mount on MOUNTPOINT looks like a doppel FUSE mount.
is_doppel_mount() {
	local ent
	ent=$(mount_entry "$1") || return 1
	local fstype=${ent%% *} source=${ent#* }
	case $fstype in
	*doppel*) return 0 ;;
	fuse.loopback) return 1 ;;
	fuse*) case $source in *doppel*) return 0 ;; esac ;;
	esac
	return 1
}

# Default volume location, as documented for `doppel init`.
default_store() {
	if [ -n "${DOPPEL_STORE:-}" ]; then
		printf '%s\n' "$DOPPEL_STORE"
	else
		printf '%s\n' "${XDG_DATA_HOME:-${HOME:?HOME is not set}/.local/share}/doppel/default"
	fi
}

# Flush dirty data and drop the page, dentry and inode caches. Returns 1
# (with a warning) when that is not permitted.
drop_caches() {
	sync
	if [ -w /proc/sys/vm/drop_caches ]; then
		echo 3 >/proc/sys/vm/drop_caches && return 0
	fi
	warn "cannot drop page caches (need root and a writable /proc/sys/vm/drop_caches)"
	return 1
}

# Pretty-print a byte count (a negative one too: a store can shrink).
human_bytes() {
	awk -v b="$1" 'BEGIN {
		split("B KiB MiB GiB TiB PiB", u, " "); i = 1; sign = ""
		if (b < 0) { sign = "-"; b = -b }
		while (b >= 1024 && i < 6) { b /= 1024; i++ }
		if (i == 1) printf "%s%d %s\n", sign, b, u[i]; else printf "%s%.1f %s\n", sign, b, u[i]
	}'
}

# Nanosecond wall clock.
now_ns() { date +%s%N; }
