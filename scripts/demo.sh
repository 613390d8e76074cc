#!/usr/bin/env bash
# doppel demo: deduplication and copy-on-write in a few commands.
#
#   scripts/demo.sh [MOUNTPOINT]        (default /tmp/doppel-demo; `make demo`)
#
# Uses bin/doppel and the DEFAULT volume (no --store: $DOPPEL_STORE, else
# $XDG_DATA_HOME/doppel/default, else ~/.local/share/doppel/default), creating
# it with `doppel init` if it does not exist. Mounts it (or reuses an existing
# doppel mount), plays with a 256 MiB file of random data in MOUNTPOINT/demo,
# and leaves the volume mounted so you can explore it.
#
# Environment: DOPPEL (binary, default bin/doppel), DEMO_SIZE_MIB (256).
set -euo pipefail

LOG_PREFIX=demo
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DOPPEL_REPO_ROOT"

DOPPEL=${DOPPEL:-bin/doppel}
MP=${1:-/tmp/doppel-demo}
SIZE_MIB=${DEMO_SIZE_MIB:-256}

[ -x "$DOPPEL" ] || die "$DOPPEL not found; run 'make build' (or 'make demo')"
MP=$(abspath "$MP")
DIR=$MP/demo

bold=$'\e[1m' dim=$'\e[2m' off=$'\e[0m'
if [ ! -t 1 ]; then bold='' dim='' off=''; fi
say() { printf '\n%s==> %s%s\n' "$bold" "$*" "$off"; }
run() { # echo a command, then run it
	printf '%s$ %s%s\n' "$dim" "$*" "$off"
	"$@"
}
# timed DISPLAY CMD...: echo DISPLAY as the command line, run CMD, print elapsed time.
timed() {
	local shown=$1 t0 t1
	shift
	printf '%s$ %s%s\n' "$dim" "$shown" "$off"
	t0=$(now_ns)
	"$@"
	t1=$(now_ns)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "    (took %.2f s)\n", (b - a) / 1e9 }'
}
# Through a pipe, so that the data arrives as ordinary writes: cat from file
# to file would use copy_file_range and share extents without any chunking.
shifted() { (printf abc && cat -- "$DIR/big") | cat >"$DIR/shifted"; }

# df_field NAME: a numeric field of `doppel df --json MP` (physical_bytes:
# chunk data stored; allocated_bytes: disk space of the segment files);
# empty if unknown.
df_field() {
	"$DOPPEL" df --json "$MP" 2>/dev/null |
		sed -n 's/^[[:space:]]*"'"$1"'":[[:space:]]*\([0-9][0-9]*\).*/\1/p' | head -1 || true
}
physical_bytes() { df_field physical_bytes; }
show_df() {
	run "$DOPPEL" df "$MP"
}
# note_growth BEFORE LABEL: prints how much physical space changed.
note_growth() {
	local before=$1 label=$2 after delta
	after=$(physical_bytes)
	[ -n "$before" ] && [ -n "$after" ] || return 0
	delta=$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.0f", a - b }')
	if [ "$delta" -eq 0 ]; then
		echo "    -> physical space unchanged $label"
	elif [ "$delta" -gt 0 ]; then
		echo "    -> physical space grew by $(human_bytes "$delta") $label"
	else
		echo "    -> physical space shrank by $(human_bytes "${delta#-}") $label"
	fi
}

# --- 1. the volume -------------------------------------------------------------
STORE=$(default_store)
say "Volume: $STORE"
if [ -d "$STORE" ] && [ -n "$(ls -A "$STORE" 2>/dev/null)" ]; then
	echo "    exists, reusing it"
else
	echo "    not found, creating it"
	run "$DOPPEL" init
fi

# --- 2. the mount ----------------------------------------------------------------
say "Mount point: $MP"
if is_mounted "$MP"; then
	if ! is_doppel_mount "$MP"; then
		die "$MP is already mounted by something else ($(mount_entry "$MP")); pass another mount point: $0 /some/dir"
	fi
	if stat -- "$MP" >/dev/null 2>&1; then
		src=$(mount_entry "$MP")
		src=${src#* }
		echo "    already mounted by doppel, reusing it"
		if [ "$src" != "$(abspath "$STORE")" ]; then
			echo "    note: it serves the volume $src, not $STORE"
		fi
	else
		echo "    stale doppel mount (daemon gone), cleaning it up"
		fuse_force_unmount "$MP" || die "cannot unmount stale $MP"
	fi
fi
if ! is_mounted "$MP"; then
	mkdir -p -- "$MP"
	if [ -n "$(ls -A "$MP" 2>/dev/null)" ]; then
		die "$MP is not empty; pass an empty directory: $0 /some/dir"
	fi
	run "$DOPPEL" mount "$MP"
	wait_mounted "$MP" 10 || die "$MP did not become a mount point"
fi

# --- 3. the demo ----------------------------------------------------------------
if [ -e "$DIR" ]; then
	echo "    removing files from a previous run ($DIR)"
	rm -rf -- "$DIR"
fi
mkdir -p -- "$DIR"

say "Starting point"
show_df
p0=$(physical_bytes)
a0=$(df_field allocated_bytes)

say "Write $SIZE_MIB MiB of random (incompressible, never seen before) data"
timed "dd if=/dev/urandom of=$DIR/big bs=1M count=$SIZE_MIB conv=fsync" \
	dd if=/dev/urandom of="$DIR/big" bs=1M count="$SIZE_MIB" iflag=fullblock conv=fsync status=none
show_df
echo "    logical and physical both grew by about $SIZE_MIB MiB: new data must be stored."
note_growth "$p0" "(expected: ~$SIZE_MIB MiB)"
p1=$(physical_bytes)

say "Copy it with plain cp"
timed "cp $DIR/big $DIR/copy" cp -- "$DIR/big" "$DIR/copy"
cmp -s -- "$DIR/big" "$DIR/copy" || die "copy differs from the original!"
show_df
echo "    logical doubled, physical did not change: the copy shares every chunk"
echo "    with the original (copy-on-write: modifying one later leaves the other intact)."
note_growth "$p1" "by the copy (expected: ~0)"
p2=$(physical_bytes)

say "Write the same data shifted by 3 bytes"
timed "(printf abc; cat $DIR/big) | cat > $DIR/shifted" shifted
show_df
echo "    content-defined chunking re-finds the chunk boundaries after the inserted"
echo "    bytes, so only the first chunk is new: physical space barely grew."
note_growth "$p2" "by the shifted file (fixed-size blocks would need ~$SIZE_MIB MiB)"

say "Delete everything"
run rm -rf -- "$DIR"
a1=$(df_field allocated_bytes)
# Freed chunks are punched out of the segment files by the daemon shortly
# after the deletion is durable (about every half second): wait for it.
if [ -n "$a0" ] && [ -n "$a1" ]; then
	for _ in $(seq 1 40); do
		a=$(df_field allocated_bytes)
		[ -n "$a" ] && [ "$a" -le $((a0 + 1048576)) ] && break
		sleep 0.25
	done
fi
show_df
echo "    logical and physical dropped at once; the daemon then punches the freed"
echo "    chunks out of its segment files, giving the disk space back to the host."
note_growth "$p0" "compared with the starting point"
a2=$(df_field allocated_bytes)
if [ -n "$a1" ] && [ -n "$a2" ]; then
	echo "    -> segment files on disk: $(human_bytes "$a1") right after rm, $(human_bytes "$a2") now"
fi

say "Done. $MP is still mounted: explore it (cp, edit, df ...)."
echo "    $DOPPEL df $MP"
echo "    Unmount with: $DOPPEL umount $MP"
