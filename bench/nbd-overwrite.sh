#!/usr/bin/env bash
# nbd-overwrite.sh: what a copy into a doppel nbd export costs, fresh and
# over data already there (every block replaced by new data, as a VM disk
# is written all day): wall time and the server's CPU seconds, optionally
# with the server's CPU profile.
#
#   bench/nbd-overwrite.sh [BINDIR]    (default bin/; several BINDIRs, in
#                                       turn per repetition, for an A/B)
#
# Per repetition and BINDIR: a fresh volume and a BENCH_MIB export of
# fixed 4 KiB blocks over TCP on loopback; nbdcopy --flush of one random
# image (fresh), then of another (over). Printed: each run, then medians,
# with the server's CPU seconds and, for the copy over data, the machine's
# busy and iowait CPU seconds during it (two cores: a copy of T seconds
# has 2T to spend; what the machine leaves idle or waiting is time no
# CPU work can explain).
#
# With BENCH_FILL=fio the first step is bench/nbd.sh's fio jobs instead
# of the fresh copy (1 MiB sequential write and read at depth 16, then 4
# KiB random writes and reads at depths 1 and 16 for BENCH_RUNTIME [15]
# seconds each): the copy over data is then bench/nbd.sh's "copyin" row,
# with the counts beside it; the "fresh copy" columns are fio's time.
#
# Environment: BENCH_REPS [2], BENCH_MIB [1024], BENCH_DIR
# [/var/tmp/doppel-bench-nbdover] (needs 3 x BENCH_MIB free), BENCH_PORT
# [10977], BENCH_PROFILE=DIR (DOPPEL_CPUPROFILE of each server, as
# DIR/REP-N.cpu), BENCH_QEMU=1 (qemu-nbd serving a raw file as one more
# server in the same turns: the peer of docs/BLOCK.md's 0.8x target).
# Needs nbdcopy and nbdinfo, and qemu-nbd with BENCH_QEMU
# (scripts/ensure-deps.sh --bench).
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
CMDLINE=$(bench_cmdline bench/nbd-overwrite.sh "$@")

[ $# -gt 0 ] || set -- "$DOPPEL_REPO_ROOT/bin"
REPS=${BENCH_REPS:-2}
MIB=${BENCH_MIB:-1024}
DIR=${BENCH_DIR:-/var/tmp/doppel-bench-nbdover}
PORT=${BENCH_PORT:-10977}
positive_ints "$REPS" "$MIB" "$PORT"
[ "${BENCH_FILL:-}" != fio ] || command -v fio >/dev/null || die "fio is missing: run scripts/ensure-deps.sh --bench"
for tool in nbdcopy nbdinfo; do
	command -v "$tool" >/dev/null || die "$tool is missing: run scripts/ensure-deps.sh --bench"
done
for bin in "$@"; do
	[ -x "$bin/doppel" ] || die "$bin/doppel is missing: run make build"
done
SERVERS=("$@")
if [ "${BENCH_QEMU:-0}" = 1 ]; then
	command -v qemu-nbd >/dev/null || die "qemu-nbd is missing: run scripts/ensure-deps.sh --bench"
	SERVERS+=(qemu-nbd)
fi

mkdir -p "$DIR"
A=$DIR/image-a.bin B=$DIR/image-b.bin STORE=$DIR/store RAW=$DIR/raw.img LOGF=$DIR/log
for img in "$A" "$B"; do
	if [ "$(stat -c %s "$img" 2>/dev/null || echo 0)" != $((MIB << 20)) ]; then
		log "writing $MIB MiB of random data to $img"
		head -c $((MIB << 20)) /dev/urandom >"$img"
	fi
done
SERVER_PID=""
stop_server() {
	if [ -n "$SERVER_PID" ]; then
		kill -INT "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
		SERVER_PID=""
	fi
}
trap stop_server EXIT

# iowait_cpu: the machine's CPU seconds waiting for I/O so far.
iowait_cpu() { awk '/^cpu /{ printf "%.2f", $6/100 }' /proc/stat; }

# fio_fill: bench/nbd.sh's fio jobs against the export; prints "SECONDS
# SERVER_CPU 0 0" as copy_run does.
fio_fill() {
	local t0 t1 c0 c1 job
	c0=$(proc_cpu "$SERVER_PID") t0=$(date +%s%N)
	for job in "write 1M 16 0" "read 1M 16 0" "randwrite 4k 1 1" "randwrite 4k 16 1" "randread 4k 1 1" "randread 4k 16 1"; do
		set -- $job
		fio --name=job --ioengine=nbd --uri="nbd://127.0.0.1:$PORT/disk" --rw="$1" --bs="$2" --iodepth="$3" \
			--size="${MIB}M" --time_based="$4" --runtime="${BENCH_RUNTIME:-15}" --end_fsync=1 --randrepeat=0 >>"$LOGF" 2>&1
	done
	t1=$(date +%s%N) c1=$(proc_cpu "$SERVER_PID")
	printf '%s %s 0 0\n' "$(secs "$t0" "$t1")" "$(sub "$c0" "$c1")"
}

# copy_run IMAGE: prints "SECONDS SERVER_CPU BUSY_CPU IOWAIT_CPU" of one
# nbdcopy into the export.
copy_run() {
	local t0 t1 c0 c1 b0 b1 w0 w1
	c0=$(proc_cpu "$SERVER_PID") b0=$(busy_cpu) w0=$(iowait_cpu) t0=$(date +%s%N)
	nbdcopy --flush "$1" "nbd://127.0.0.1:$PORT/disk" 2>>"$LOGF"
	t1=$(date +%s%N) c1=$(proc_cpu "$SERVER_PID") b1=$(busy_cpu) w1=$(iowait_cpu)
	printf '%s %s %s %s\n' "$(secs "$t0" "$t1")" "$(sub "$c0" "$c1")" "$(sub "$b0" "$b1")" "$(sub "$w0" "$w1")"
}

# start_server SERVER REP I: a fresh export "disk" of MIB on PORT, served
# by doppel from BINDIR SERVER or by qemu-nbd.
start_server() {
	rm -rf "$STORE" "$RAW"
	if [ "$1" = qemu-nbd ]; then
		truncate -s "${MIB}M" "$RAW"
		qemu_nbd_start "$RAW" "$PORT" "$LOGF"
	else
		"$1/doppel" init --store "$STORE" >>"$LOGF" 2>&1
		local prof=""
		if [ -n "${BENCH_PROFILE:-}" ]; then
			mkdir -p "$BENCH_PROFILE"
			prof=$BENCH_PROFILE/$2-$3.cpu
		fi
		DOPPEL_CPUPROFILE=$prof "$1/doppel" nbd --store "$STORE" --listen "tcp:127.0.0.1:$PORT" \
			--create "${MIB}M" --name disk /disk.img >>"$LOGF" 2>&1 &
	fi
	SERVER_PID=$!
	nbd_wait "$PORT" "$LOGF"
}

declare -A RES
bench_start
for rep in $(seq "$REPS"); do
	for i in "${!SERVERS[@]}"; do
		server=${SERVERS[$i]}
		start_server "$server" "$rep" "$i"
		if [ "${BENCH_FILL:-}" = fio ]; then
			read -r fs fc _ _ < <(fio_fill)
		else
			read -r fs fc _ _ < <(copy_run "$A")
		fi
		read -r os oc ob ow < <(copy_run "$B")
		stop_server
		log "repetition $rep, $server: fresh $fs s (server CPU $fc s), over $os s (server CPU $oc s, machine busy $ob s, iowait $ow s)"
		RES[$i,fs]+="$fs " RES[$i,fc]+="$fc " RES[$i,os]+="$os " RES[$i,oc]+="$oc " RES[$i,ob]+="$ob " RES[$i,ow]+="$ow "
	done
done
rm -rf "$STORE" "$RAW"

echo
echo "| server | fresh copy | server CPU | copy over it | server CPU | machine busy | iowait |"
echo "|---|---|---|---|---|---|---|"
for i in "${!SERVERS[@]}"; do
	echo "| ${SERVERS[$i]} | $(median "${RES[$i,fs]}") s | $(median "${RES[$i,fc]}") s | $(median "${RES[$i,os]}") s | $(median "${RES[$i,oc]}") s | $(median "${RES[$i,ob]}") s | $(median "${RES[$i,ow]}") s |"
done
echo
machine_section "$DIR" "$CMDLINE" "as root" "| Repetitions | $REPS, servers in turn, medians |"
