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
#       qcow2    qemu-nbd --discard=unmap on a qcow2 image + nbdfuse +
#                losetup (what a user has today without doppel)
#       plain    losetup on a sparse file on the host disk (the limit)
# DISCARD: "discard" (mount -o discard, the default) or "fstrim" (mount
#       without it, then fstrim after the delete).
# WORKLOAD: what is written and deleted in the guest file system:
#       tree     cp -a of TREE (default /usr/local/go/src), then rm -r
#       db       a SQLite database: DB_MIB of 4 KiB random rows inserted,
#                all deleted, VACUUM (the file shrinks; ext4 frees its blocks)
#       images   three copies of a VM-like image (IMAGE_MIB: random data,
#                then as much again of zeros written out), then rm
#
# Prints one line per half second after the delete (seconds since the rm
# began, bytes held), then a summary. Needs root (losetup, mount).
# Environment: DOPPEL (binary, default doppel on PATH), SIZE (default 1G),
# DISCARD, WORKLOAD, DB_MIB (default 100), IMAGE_MIB (default 64), WORK
# (scratch directory, default a new one in /tmp).
set -euo pipefail
mode=${1:-nbd}
tree=${2:-/usr/local/go/src}
doppel=${DOPPEL:-doppel}
size=${SIZE:-1G}
discard=${DISCARD:-discard}
workload=${WORKLOAD:-tree}
db_mib=${DB_MIB:-100}
image_mib=${IMAGE_MIB:-64}
work=${WORK:-$(mktemp -d /tmp/purge.XXXXXX)}
store=$work/store mnt=$work/mnt fsdir=$work/fs nbdmnt=$work/nbdfuse
mkdir -p "$mnt" "$fsdir" "$nbdmnt"
loop="" nbdpid="" fusepid="" qemupid=""

cleanup() {
	set +e
	mountpoint -q "$fsdir" && umount "$fsdir"
	[ -n "$loop" ] && losetup -d "$loop"
	mountpoint -q "$nbdmnt" && fusermount3 -u "$nbdmnt"
	[ -n "$fusepid" ] && wait "$fusepid" 2>/dev/null
	[ -n "$nbdpid" ] && kill -INT "$nbdpid" && wait "$nbdpid" 2>/dev/null
	[ -n "$qemupid" ] && kill "$qemupid" && wait "$qemupid" 2>/dev/null
	mountpoint -q "$mnt" && "$doppel" umount "$mnt"
}
trap cleanup EXIT

# held prints the bytes the backing store holds: the volume's allocated
# chunk data, or the sparse file's allocated blocks.
held() {
	if [ "$mode" = plain ]; then
		echo $(($(stat -c %b "$work/plain.img") * 512))
	elif [ "$mode" = qcow2 ]; then
		echo $(($(stat -c %b "$work/disk.qcow2") * 512))
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
qcow2)
	qemu-img create -q -f qcow2 "$work/disk.qcow2" "$size"
	qemu-nbd -f qcow2 --discard=unmap -t -k "$work/qemu.sock" -x disk "$work/disk.qcow2" >"$work/qemu.log" 2>&1 &
	qemupid=$!
	for _ in $(seq 100); do [ -S "$work/qemu.sock" ] && break; sleep 0.1; done
	nbdfuse "$nbdmnt" "nbd+unix:///disk?socket=$work/qemu.sock" &
	fusepid=$!
	for _ in $(seq 100); do [ -e "$nbdmnt/nbd" ] && break; sleep 0.1; done
	dev=$nbdmnt/nbd
	;;
*)
	echo "unknown mode $mode (nbd, fuse, qcow2, plain)" >&2
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
case $workload in
tree) cp -a "$tree" "$fsdir/tree" ;;
db)
	python3 - "$fsdir/db.sqlite" "$db_mib" <<'PY'
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("create table t (id integer primary key, v blob)")
for i in range(int(sys.argv[2]) * 256):
    db.execute("insert into t (v) values (?)", (os.urandom(4000),))
    if i % 1024 == 0:
        db.commit()
db.commit()
PY
	;;
images)
	head -c $((image_mib << 20)) /dev/urandom >"$work/image.bin"
	head -c $((image_mib << 20)) /dev/zero >>"$work/image.bin"
	for i in 1 2 3; do cp --sparse=never "$work/image.bin" "$fsdir/vm$i.img"; done
	rm -f "$work/image.bin"
	;;
*)
	echo "unknown workload $workload (tree, db, images)" >&2
	exit 2
	;;
esac
sync
peak=$(held)
start=$(date +%s.%N)
case $workload in
tree) rm -rf "$fsdir/tree" ;;
db) python3 -c 'import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute("delete from t"); db.commit(); db.execute("vacuum"); db.close()' "$fsdir/db.sqlite" ;;
images) rm -f "$fsdir"/vm*.img ;;
esac
sync
[ "$discard" = fstrim ] && fstrim "$fsdir"
# Watch until the bytes held have not changed for 4 s (longer than a
# block an overwrite freed waits in the store's pool, 1.5 s, plus the
# reclaimer's passes), so that space coming back in steps is all seen
# (the loop stopped at the first pause of 0.5 s before).
last="" settled="" same=0 times=() helds=()
for i in $(seq 120); do
	now=$(held)
	t=$(echo "$(date +%s.%N) - $start" | bc)
	printf '%6.2f s  %d\n' "$t" "$now"
	times+=("$t") helds+=("$now")
	if [ "$now" != "$last" ]; then settled=$t same=0; else same=$((same + 1)); fi
	[ "$i" -gt 10 ] && [ "$same" -ge 8 ] && break
	last=$now
	sleep 0.5
done
after=$(held)
# back95: the first sample by which 95 % of what came back was back (a
# file system's journal keeps writing a few blocks, pooled and punched,
# so the last change seen says little).
back95=""
limit=$((after + (peak - after) / 20))
for i in "${!helds[@]}"; do
	if [ "${helds[$i]}" -le "$limit" ]; then back95=${times[$i]}; break; fi
done
echo "mode=$mode discard=$discard workload=$workload"
printf 'before=%d peak=%d after=%d freed=%.1f%% of what the workload added, 95%% of it back %.2f s and the last change seen %.2f s after the delete began\n' \
	"$before" "$peak" "$after" "$(echo "scale=3; 100 * ($peak - $after) / ($peak - $before)" | bc)" "${back95:-0}" "$settled"
