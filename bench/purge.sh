#!/usr/bin/env bash
# purge.sh: the purge scenario of issue 15 (Practical Techniques for
# Eliminating Storage of Deleted Data): an ext4 file system on a block
# device whose backing store is a doppel volume file, a tree written into
# it and deleted, and the volume's chunk data measured before, at the peak
# and after, against the same scenario on a plain sparse file.
#
#   sudo bench/purge.sh [MODE] [TREE]
#
# MODE: nbd      doppel nbd + nbdfuse + losetup (the block export)
#       fuse     losetup on the volume file through the FUSE mount alone
#       plain    losetup on a sparse file on the host disk (the limit)
# DISCARD: "discard" (mount -o discard, the default) or "fstrim" (mount
#       without it, then fstrim after the delete).
# TREE: what to copy in (default /usr/local/go/src).
#
# Prints one line per half second after the delete (seconds since the rm
# began, bytes held), then a summary. Needs root (losetup, mount).
# Environment: DOPPEL (binary, default doppel on PATH), SIZE (default 1G),
# DISCARD, WORK (scratch directory, default a new one in /tmp).
set -euo pipefail
mode=${1:-nbd}
tree=${2:-/usr/local/go/src}
doppel=${DOPPEL:-doppel}
size=${SIZE:-1G}
discard=${DISCARD:-discard}
work=${WORK:-$(mktemp -d /tmp/purge.XXXXXX)}
store=$work/store mnt=$work/mnt fsdir=$work/fs nbdmnt=$work/nbdfuse
mkdir -p "$mnt" "$fsdir" "$nbdmnt"
loop="" nbdpid="" fusepid=""

cleanup() {
	set +e
	mountpoint -q "$fsdir" && umount "$fsdir"
	[ -n "$loop" ] && losetup -d "$loop"
	mountpoint -q "$nbdmnt" && fusermount3 -u "$nbdmnt"
	[ -n "$fusepid" ] && wait "$fusepid" 2>/dev/null
	[ -n "$nbdpid" ] && kill -INT "$nbdpid" && wait "$nbdpid" 2>/dev/null
	mountpoint -q "$mnt" && "$doppel" umount "$mnt"
}
trap cleanup EXIT

# held prints the bytes the backing store holds: the volume's allocated
# chunk data, or the sparse file's allocated blocks.
held() {
	if [ "$mode" = plain ]; then
		echo $(($(stat -c %b "$work/plain.img") * 512))
	else
		"$doppel" df --json --store "$store" | sed -n 's/.*"allocated_bytes": \([0-9]*\).*/\1/p'
	fi
}

case $mode in
plain)
	truncate -s "$size" "$work/plain.img"
	dev=$work/plain.img
	;;
fuse)
	"$doppel" init --store "$store" >/dev/null
	"$doppel" mount --store "$store" "$mnt"
	truncate -s "$size" "$mnt/disk.img"
	python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.doppel.chunking", b"fixed:4K")' "$mnt/disk.img"
	dev=$mnt/disk.img
	;;
nbd)
	"$doppel" init --store "$store" >/dev/null
	"$doppel" nbd --store "$store" --create "$size" /disk.img >"$work/nbd.log" 2>&1 &
	nbdpid=$!
	for _ in $(seq 100); do [ -S "$store/nbd.sock" ] && break; sleep 0.1; done
	nbdfuse "$nbdmnt" "nbd+unix:///disk.img?socket=$store/nbd.sock" &
	fusepid=$!
	for _ in $(seq 100); do [ -e "$nbdmnt/nbd" ] && break; sleep 0.1; done
	dev=$nbdmnt/nbd
	;;
*)
	echo "unknown mode $mode (nbd, fuse, plain)" >&2
	exit 2
	;;
esac

loop=$(losetup -f --show "$dev")
mkfs.ext4 -q -E nodiscard "$loop"
opts=""
[ "$discard" = discard ] && opts="-o discard"
mount $opts "$loop" "$fsdir"
sync
before=$(held)
cp -a "$tree" "$fsdir/tree"
sync
peak=$(held)
start=$(date +%s.%N)
rm -rf "$fsdir/tree"
sync
[ "$discard" = fstrim ] && fstrim "$fsdir"
last="" settled=""
for i in $(seq 60); do
	now=$(held)
	t=$(echo "$(date +%s.%N) - $start" | bc)
	printf '%6.2f s  %d\n' "$t" "$now"
	[ "$now" != "$last" ] && settled=$t
	[ "$i" -gt 10 ] && [ "$now" = "$last" ] && break
	last=$now
	sleep 0.5
done
after=$(held)
echo "mode=$mode discard=$discard tree=$tree"
printf 'before=%d peak=%d after=%d freed=%.1f%% of the peak, last change seen %.2f s after the rm began\n' \
	"$before" "$peak" "$after" "$(echo "scale=3; 100 * ($peak - $after) / $peak" | bc)" "$settled"
