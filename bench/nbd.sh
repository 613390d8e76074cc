#!/usr/bin/env bash
# nbd.sh: doppel nbd side by side with qemu-nbd (raw file) and nbdkit's
# file plugin, on the same disk, with fio's nbd engine and nbdcopy.
#
#   bench/nbd.sh [BINDIR]        (BINDIR: doppel and doppel-core; default bin/)
#
# Per repetition and server, in turn (so that the machine's noise falls on
# all alike), each on a fresh BENCH_SIZE_MIB export over TCP on loopback:
#   - fio, one job: sequential 1 MiB write then read (iodepth 16), random
#     4 KiB write and read at iodepth 1 and 16 (BENCH_RUNTIME seconds each;
#     the random jobs run over the whole export after the sequential write
#     filled it);
#   - nbdcopy of a BENCH_COPY_MIB random image into the export (over what
#     fio wrote) and back out;
#   - nbdcopy of the image into a fresh export (a new VM disk).
# Writes end with a FLUSH (fio's end_fsync, nbdcopy's flush): every figure
# includes making the data durable.
# Printed: every run, then the medians and doppel's ratio to qemu-nbd.
#
# Environment: BENCH_REPS [3], BENCH_SIZE_MIB [2048], BENCH_COPY_MIB [4096],
# BENCH_RUNTIME [15], BENCH_DIR [/var/tmp/doppel-bench-nbd] (on the disk to
# measure: needs BENCH_SIZE_MIB + 2 * BENCH_COPY_MIB free), BENCH_PORT
# [10909], BENCH_BASE_BIN=BINDIR (an older doppel as a fourth server, in
# the same turns: a before/after of a change next to the peers). Needs fio (with its nbd engine), qemu-nbd, nbdkit, nbdcopy:
# scripts/ensure-deps.sh --bench installs them.
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
CMDLINE=$(bench_cmdline bench/nbd.sh "$@")

BIN=${1:-$DOPPEL_REPO_ROOT/bin}
BASE_BIN=${BENCH_BASE_BIN:-}
REPS=${BENCH_REPS:-3}
SIZE_MIB=${BENCH_SIZE_MIB:-2048}
COPY_MIB=${BENCH_COPY_MIB:-4096}
RUNTIME=${BENCH_RUNTIME:-15}
DIR=${BENCH_DIR:-/var/tmp/doppel-bench-nbd}
PORT=${BENCH_PORT:-10909}
positive_ints "$REPS" "$SIZE_MIB" "$COPY_MIB" "$RUNTIME" "$PORT"
[ "$COPY_MIB" -le "$SIZE_MIB" ] || SIZE_MIB=$COPY_MIB
for tool in fio qemu-nbd nbdkit nbdcopy; do
	command -v "$tool" >/dev/null || die "$tool is missing: run scripts/ensure-deps.sh --bench"
done
fio --enghelp 2>/dev/null | grep -qw nbd || die "this fio has no nbd engine"
[ -x "$BIN/doppel" ] || die "$BIN/doppel is missing: run make build"

mkdir -p "$DIR"
SRC=$DIR/image.bin STORE=$DIR/store RAW=$DIR/raw.img LOGF=$DIR/log
SERVER_PID=""
stop_server() {
	if [ -n "$SERVER_PID" ]; then
		kill "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
		SERVER_PID=""
	fi
}
trap stop_server EXIT
if [ "$(stat -c %s "$SRC" 2>/dev/null || echo 0)" != $((COPY_MIB << 20)) ]; then
	log "writing $COPY_MIB MiB of random data to $SRC"
	head -c $((COPY_MIB << 20)) /dev/urandom >"$SRC"
fi

# start_server NAME: a fresh, empty export "disk" of SIZE_MIB on PORT.
start_server() {
	rm -rf "$STORE" "$RAW"
	case $1 in
	doppel | doppel-base)
		local bin=$BIN
		[ "$1" = doppel ] || bin=$BASE_BIN
		"$bin/doppel" init --store "$STORE" >>"$LOGF" 2>&1
		"$bin/doppel" nbd --store "$STORE" --listen "tcp:127.0.0.1:$PORT" \
			--create "${SIZE_MIB}M" --name disk /disk.img >>"$LOGF" 2>&1 &
		;;
	qemu-nbd)
		truncate -s "${SIZE_MIB}M" "$RAW"
		qemu_nbd_start "$RAW" "$PORT" "$LOGF"
		;;
	nbdkit)
		truncate -s "${SIZE_MIB}M" "$RAW"
		nbdkit -f -i 127.0.0.1 -p "$PORT" -e disk file "$RAW" >>"$LOGF" 2>&1 &
		;;
	esac
	SERVER_PID=$!
	nbd_wait "$PORT" "$LOGF"
}

# FIO_JSON: prints one figure of fio's JSON report (on stdin, after the
# engine's "connected" line): argv 1 is read or write, argv 2 iops or mibs.
FIO_JSON='
import json, sys
s = sys.stdin.read()
j = json.loads(s[s.index("{"):])["jobs"][0][sys.argv[1]]
print("%.0f" % j["iops"] if sys.argv[2] == "iops" else "%.1f" % (j["bw_bytes"] / 1048576))
'

# fio_run RW BS DEPTH: prints the bandwidth in MiB/s (sequential) or the
# IOPS (random) of one fio job against the export.
fio_run() {
	local rw=$1 bs=$2 depth=$3 out
	out=$(fio --name=job --ioengine=nbd --uri="nbd://127.0.0.1:$PORT/disk" \
		--rw="$rw" --bs="$bs" --iodepth="$depth" --size="${SIZE_MIB}M" \
		--time_based=$([[ $rw == rand* ]] && echo 1 || echo 0) --runtime="$RUNTIME" \
		--end_fsync=1 --output-format=json --randrepeat=0 2>>"$LOGF")
	case $rw in
	read | randread) dir=read ;;
	*) dir=write ;;
	esac
	if [[ $rw == rand* ]]; then
		printf '%s' "$out" | python3 -c "$FIO_JSON" "$dir" iops
	else
		printf '%s' "$out" | python3 -c "$FIO_JSON" "$dir" mibs
	fi
}

# copy_secs IN OUT: seconds nbdcopy takes (with its final flush).
copy_secs() {
	local t0 t1
	t0=$(date +%s%N)
	nbdcopy --flush "$1" "$2" 2>>"$LOGF"
	t1=$(date +%s%N)
	secs "$t0" "$t1"
}

SERVERS=(doppel qemu-nbd nbdkit)
if [ -n "$BASE_BIN" ]; then
	[ -x "$BASE_BIN/doppel" ] || die "$BASE_BIN/doppel is missing"
	SERVERS=(doppel-base "${SERVERS[@]}")
fi
TESTS=(seqwrite seqread randwrite1 randwrite16 randread1 randread16 copyin copyout copyfresh)
declare -A RES
bench_start
for rep in $(seq "$REPS"); do
	for s in "${SERVERS[@]}"; do
		log "repetition $rep: $s"
		start_server "$s"
		RES[$s,seqwrite]+="$(fio_run write 1M 16) "
		RES[$s,seqread]+="$(fio_run read 1M 16) "
		RES[$s,randwrite1]+="$(fio_run randwrite 4k 1) "
		RES[$s,randwrite16]+="$(fio_run randwrite 4k 16) "
		RES[$s,randread1]+="$(fio_run randread 4k 1) "
		RES[$s,randread16]+="$(fio_run randread 4k 16) "
		uri="nbd://127.0.0.1:$PORT/disk"
		RES[$s,copyin]+="$(copy_secs "$SRC" "$uri") "
		rm -f "$DIR/out.bin"
		truncate -s "${SIZE_MIB}M" "$DIR/out.bin"
		RES[$s,copyout]+="$(copy_secs "$uri" "$DIR/out.bin") "
		stop_server
		start_server "$s"
		RES[$s,copyfresh]+="$(copy_secs "$SRC" "$uri") "
		stop_server
		for t in "${TESTS[@]}"; do
			printf '%s\t%s\t%s\n' "$s" "$t" "${RES[$s,$t]}"
		done
	done
done
rm -f "$DIR/out.bin" "$RAW"
rm -rf "$STORE"

echo
if [ -n "$BASE_BIN" ]; then
	echo "| test | unit | doppel nbd (base) | doppel nbd | qemu-nbd | nbdkit file | base / qemu-nbd | doppel / qemu-nbd |"
	echo "|---|---|---|---|---|---|---|---|"
else
	echo "| test | unit | doppel nbd | qemu-nbd | nbdkit file | doppel / qemu-nbd |"
	echo "|---|---|---|---|---|---|"
fi
# ratio D Q T: D against qemu-nbd's Q, above 1 when D is ahead.
ratio() {
	if [[ $3 == copy* ]]; then
		awk -v d="$1" -v q="$2" 'BEGIN { printf "%.2f", q / d }'
	else
		awk -v d="$1" -v q="$2" 'BEGIN { printf "%.2f", d / q }'
	fi
}
for t in "${TESTS[@]}"; do
	case $t in
	seq*) unit="MiB/s" ;;
	rand*) unit="IOPS" ;;
	copy*) unit="s ($COPY_MIB MiB)" ;;
	esac
	d=$(median "${RES[doppel,$t]}") q=$(median "${RES[qemu-nbd,$t]}") k=$(median "${RES[nbdkit,$t]}")
	# Higher is better for rates; for seconds the ratio is inverted so
	# that above 1 always means doppel is ahead.
	if [ -n "$BASE_BIN" ]; then
		b=$(median "${RES[doppel-base,$t]}")
		echo "| $t | $unit | $b | $d | $q | $k | $(ratio "$b" "$q" "$t") | $(ratio "$d" "$q" "$t") |"
	else
		echo "| $t | $unit | $d | $q | $k | $(ratio "$d" "$q" "$t") |"
	fi
done
echo
machine_section "$DIR" "$CMDLINE" "as root" "| Repetitions | $REPS, servers in turn, medians |"
