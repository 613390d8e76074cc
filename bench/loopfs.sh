# shellcheck shell=bash
# btrfs and XFS targets of the benchmarks: a sparse image file in
# $BENCH_DIR per file system, attached to a loop device with direct I/O (so
# that the image's pages are not cached a second time) and mounted on
# $BENCH_DIR/mnt-TYPE. Sourced by bench/suite-lib.sh. Needs root.

declare -gA LOOPDEV=() # TYPE -> loop device of this run

loopfs_image() { echo "$BENCH_DIR/$1.img"; }
loopfs_mnt() { echo "$BENCH_DIR/mnt-$1"; }

# loopfs_create TYPE MIB: a fresh sparse image of MIB MiB, formatted and mounted.
loopfs_create() {
	local type=$1 mib=$2 img dev
	img=$(loopfs_image "$type")
	loopfs_destroy "$type"
	truncate -s "${mib}M" "$img"
	dev=$(losetup --find --show --direct-io=on "$img") || die "losetup $img failed"
	LOOPDEV[$type]=$dev
	case $type in
	btrfs) mkfs.btrfs -q -f "$dev" >>"$LOGS/mkfs.log" 2>&1 ;;
	xfs) mkfs.xfs -q -f "$dev" >>"$LOGS/mkfs.log" 2>&1 ;;
	*) die "unknown loop file system $type" ;;
	esac || die "mkfs of $type on $dev failed (see $LOGS/mkfs.log)"
	loopfs_mount "$type"
}

loopfs_mount() {
	local mnt
	mnt=$(loopfs_mnt "$1")
	mkdir -p -- "$mnt"
	mount -t "$1" "${LOOPDEV[$1]}" "$mnt" || die "mount of $1 (${LOOPDEV[$1]}) failed"
}

loopfs_unmount() {
	local mnt
	mnt=$(loopfs_mnt "$1")
	if is_mounted "$mnt"; then
		umount "$mnt" 2>/dev/null || umount -l "$mnt" || warn "cannot unmount $mnt"
	fi
}

# loopfs_destroy TYPE: unmounts, detaches every loop device of the image
# (leftovers of an interrupted run too) and deletes the image.
loopfs_destroy() {
	local type=$1 img dev
	img=$(loopfs_image "$type")
	loopfs_unmount "$type"
	if [ -e "$img" ]; then
		for dev in $(losetup -j "$img" -O NAME -n 2>/dev/null); do
			losetup -d "$dev" || warn "cannot detach $dev"
		done
	fi
	unset "LOOPDEV[$type]"
	rm -f -- "$img"
}
