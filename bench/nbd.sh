#!/usr/bin/env bash
# nbd.sh: doppel nbd side by side with qemu-nbd and nbdkit serving a raw
# file on the same disk, measured with fio's nbd engine and nbdcopy.
#
#   DOPPEL=bin/doppel bench/nbd.sh
#
# Environment: SIZE (export size, default 1G), RUNTIME (seconds per fio
# job, default 10), WORK (scratch directory, default a new one in /tmp on
# the disk under test). Prints one table row per server and job.
set -euo pipefail
doppel=${DOPPEL:-doppel}
size=${SIZE:-1G}
runtime=${RUNTIME:-10}
work=${WORK:-$(mktemp -d /tmp/nbdbench.XXXXXX)}
pid=""
stop() {
	if [ -n "$pid" ]; then
		kill -INT "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	pid=""
}
trap stop EXIT

head -c "$size" /dev/urandom >"$work/image.raw" 2>/dev/null || true
[ -s "$work/image.raw" ] || { echo "cannot make $work/image.raw" >&2; exit 1; }

start() { # server name; sets sock, uri
	sock=$work/$1.sock
	rm -f "$sock"
	case $1 in
	doppel)
		rm -rf "$work/store" && "$doppel" init --store "$work/store" >/dev/null
		"$doppel" nbd --store "$work/store" --listen "unix:$sock" --create "$size" /disk.img >/dev/null &
		pid=$!
		uri="nbd+unix:///disk.img?socket=$sock"
		;;
	qemu-nbd)
		rm -f "$work/qemu.raw" && truncate -s "$size" "$work/qemu.raw"
		qemu-nbd -t --shared=16 -f raw -x disk.img --cache=none --aio=native --discard=unmap -k "$sock" "$work/qemu.raw" &
		pid=$!
		uri="nbd+unix:///disk.img?socket=$sock"
		;;
	nbdkit)
		rm -f "$work/nbdkit.raw" && truncate -s "$size" "$work/nbdkit.raw"
		nbdkit -f -U "$sock" file "$work/nbdkit.raw" &
		pid=$!
		uri="nbd+unix:///?socket=$sock"
		;;
	esac
	for _ in $(seq 100); do [ -S "$sock" ] && return; sleep 0.1; done
	echo "$1 did not start" >&2
	exit 1
}

job() { # name rw bs iodepth
	fio --name="$1" --ioengine=nbd --uri="$uri" --rw="$2" --bs="$3" --iodepth="$4" \
		--size="$size" --runtime="$runtime" --time_based --output-format=terse --terse-version=3 \
		| awk -F';' -v n="$1" '$1 == 3 { printf "%-12s %8.1f MiB/s %8.0f IOPS\n", n, ($7 + $48) / 1024, $8 + $49 }'
}

printf '%-10s %-12s %s\n' server job result
for server in doppel qemu-nbd nbdkit; do
	start "$server"
	t0=$(date +%s.%N)
	nbdcopy "$work/image.raw" "$uri"
	t1=$(date +%s.%N)
	nbdcopy "$uri" "$work/out.raw"
	t2=$(date +%s.%N)
	printf '%-10s %-12s %.2f s in, %.2f s out\n' "$server" nbdcopy "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)"
	rm -f "$work/out.raw"
	for spec in "seqwrite write 1M 16" "seqread read 1M 16" "randwrite1 randwrite 4k 1" "randwrite16 randwrite 4k 16" "randread1 randread 4k 1" "randread16 randread 4k 16"; do
		set -- $spec
		printf '%-10s ' "$server"
		job "$@"
	done
	stop
done
