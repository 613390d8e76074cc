# shellcheck shell=bash
# The workloads of bench/suite.sh, one function per workload: wl_NAME TARGET
# REP measures NAME on TARGET and records the results. Sourced by suite.sh,
# which sets the sizes (SIZE_MIB, NFILES, ...), RUN and the targets up.
# --- bookkeeping ---------------------------------------------------------------------
# record WORKLOAD TARGET REP VALUE: one measurement (seconds, bytes or KiB).
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RUN/results.tsv"; }
meta() { printf '%s=%s\n' "$1" "$2" >>"$RUN/meta.txt"; }
has() { # has WORD LIST...
	local w=$1
	shift
	case " $* " in *" $w "*) return 0 ;; esac
	return 1
}
mibps() { awk -v m="$1" -v s="$2" 'BEGIN { printf "%.0f MiB/s (%.2f s)", m / s, s }'; }
opsps() { awk -v n="$1" -v s="$2" 'BEGIN { printf "%.0f ops/s (%.2f s)", n / s, s }'; }

# Per-workload peak RSS of doppel: every workload starts on a fresh daemon
# (target_remount) and ends by sampling it.
rss_begin() { if [ "$1" = doppel ]; then D_PEAK_KIB=0; fi; }
rss_end() { # rss_end WORKLOAD TARGET REP
	[ "$2" = doppel ] || return 0
	doppel_sample_hwm
	record "rss_$1" doppel "$3" "$D_PEAK_KIB"
}

# doppel_space: "PHYSICAL META", the volume's chunk data and metadata bytes.
doppel_space() {
	local j
	j=$("$DOPPEL" df --json "$D_MNT") || die "doppel df failed"
	echo "$(json_num physical_bytes <<<"$j") $(json_num meta_bytes <<<"$j")"
}

# --- workloads ------------------------------------------------------------------------
# seq_args FILE RW SEED JSON: sets SEQ_ARGS to fio's arguments for 1 MiB
# sequential I/O of SIZE_MIB. Writes are unique random data (a new buffer
# per I/O), the same again for the same SEED. (timed runs commands, not
# functions, hence the array.)
seq_args() {
	SEQ_ARGS=(--name="seq$2" --filename="$1" --rw="$2" --bs=1M --size="${SIZE_MIB}M" --ioengine=psync
		--output-format=json --output="$4")
	if [ "$2" = write ]; then
		SEQ_ARGS+=(--end_fsync=1 --refill_buffers --randseed="$3" --fallocate=none)
	else
		SEQ_ARGS+=(--readonly)
	fi
}

wl_seq() { # wl_seq TARGET REP
	local t=$1 r=$2 d sec p0 p1 m0 m1
	d=$(target_dir "$t")
	target_remount "$t"
	rss_begin "$t"
	drop
	seq_args "$d/seq-a" write $((1000 + r)) "$LOGS/seqwrite-$t-$r.json"
	timed sec fio "${SEQ_ARGS[@]}"
	record seqwrite "$t" "$r" "$sec"
	log "rep $r seq $t: write $(mibps "$SIZE_MIB" "$sec")"
	target_remount "$t"
	drop
	seq_args "$d/seq-a" read 0 "$LOGS/seqread-$t-$r.json"
	timed sec fio "${SEQ_ARGS[@]}"
	record seqread "$t" "$r" "$sec"
	log "rep $r seq $t: read $(mibps "$SIZE_MIB" "$sec")"
	if [ "$t" = doppel ] || [ "$t" = native ]; then
		# The same data again under another name, twice: right after the
		# read, whose pages are still cached, and after dropping the
		# caches, as before the first write. On this project's VMs a
		# write into the page cache costs two to three times the CPU while
		# another 4 GiB of pages stay cached (new memory is faulted in
		# from the host), on any file system: native is the control.
		seq_again "$t" "$r" "$d/seq-b" rewrite_after_read "right after the read"
		rm -f -- "$d/seq-b" # doppel's space growth is measured on seq-c
		drop
		seq_again "$t" "$r" "$d/seq-c" rewrite "caches dropped"
	fi
	rm -f -- "$d/seq-a" "$d/seq-b" "$d/seq-c"
	rss_end seq "$t" "$r"
}

# seq_again TARGET REP FILE KEY WHEN: writes seq-a's data again as FILE and
# records it as KEY; on doppel also the space it took (KEY_growth,
# KEY_meta_growth).
seq_again() {
	local t=$1 r=$2 f=$3 key=$4 when=$5 sec p0 p1 m0 m1 growth=""
	[ "$t" != doppel ] || read -r p0 m0 <<<"$(doppel_space)"
	seq_args "$f" write $((1000 + r)) "$LOGS/$key-$t-$r.json"
	timed sec fio "${SEQ_ARGS[@]}"
	record "$key" "$t" "$r" "$sec"
	if [ "$t" = doppel ]; then
		read -r p1 m1 <<<"$(doppel_space)"
		record "${key}_growth" "$t" "$r" $((p1 - p0))
		record "${key}_meta_growth" "$t" "$r" $((m1 - m0))
		growth=", growth: chunk data $(human_bytes $((p1 - p0))), metadata $(human_bytes $((m1 - m0)))"
	fi
	log "rep $r seq $t: same data again, $when: $(mibps "$SIZE_MIB" "$sec")$growth"
}

wl_rand() { # wl_rand TARGET REP
	local t=$1 r=$2 f sec qd ops=$((RAND_IO_MIB * 256))
	f=$(target_dir "$t")/rand
	target_remount "$t"
	rss_begin "$t"
	fio --name=layout --filename="$f" --rw=write --bs=1M --size="${RAND_FILE_MIB}M" --ioengine=psync \
		--end_fsync=1 --refill_buffers --randseed=$((3000 + r)) --fallocate=none \
		--output="$LOGS/randlayout-$t-$r.txt" >/dev/null
	drop
	for qd in 1 16; do
		timed sec fio --name="randwrite$qd" --filename="$f" --rw=randwrite --bs=4k \
			--size="${RAND_FILE_MIB}M" --io_size="${RAND_IO_MIB}M" --ioengine="$RAND_ENGINE" \
			--iodepth="$qd" --direct=0 --refill_buffers --randseed=$((2000 + r)) --fallocate=none \
			--end_fsync=1 --output-format=json --output="$LOGS/randwrite$qd-$t-$r.json"
		record "randwrite_qd$qd" "$t" "$r" "$sec"
		log "rep $r rand $t: iodepth $qd $(opsps "$ops" "$sec")"
	done
	rm -f -- "$f"
	rss_end rand "$t" "$r"
}

wl_files() { # wl_files TARGET REP
	local t=$1 r=$2
	target_remount "$t"
	rss_begin "$t"
	fileops_run "$(target_dir "$t")/fileops" "$NFILES" "$FILE_SIZE" "$LOGS/fileops-$t-$r.json"
	record create "$t" "$r" "$FO_CREATE"
	record stat "$t" "$r" "$FO_STAT"
	record unlink "$t" "$r" "$FO_UNLINK"
	log "rep $r files $t: create $(opsps "$NFILES" "$FO_CREATE"), stat $(opsps "$NFILES" "$FO_STAT"), unlink $(opsps "$NFILES" "$FO_UNLINK")"
	rss_end files "$t" "$r"
}

# go_build_env DIR: the environment for building with the toolchain
# untarred in DIR/go: everything it writes stays inside DIR, no network.
go_build_env() {
	GO_ENV=(GOROOT="$1/go" GOCACHE="$1/gocache" GOPATH="$1/gopath" GOMODCACHE="$1/gopath/pkg/mod"
		GOTOOLCHAIN=local GOPROXY=off GOSUMDB=off GOFLAGS= GOENV=off CGO_ENABLED=0)
}

wl_build() { # wl_build TARGET REP
	local t=$1 r=$2 d u b
	d=$(target_dir "$t")/build
	target_remount "$t"
	rss_begin "$t"
	cat "$TARBALL" >/dev/null # the source comes from the page cache on every target
	mkdir -p -- "$d"
	timed u tar -xf "$TARBALL" -C "$d"
	go_build_env "$d"
	# In DIR, where a command's binary lands. (env -C: timed runs commands, not cd.)
	# shellcheck disable=SC2086 # BUILD_PKGS is a list of packages
	timed b env -C "$d" "${GO_ENV[@]}" "$d/go/bin/go" build $BUILD_PKGS >>"$LOGS/build-$t-$r.log" 2>&1
	record untar "$t" "$r" "$u"
	record build "$t" "$r" "$b"
	record untar_build "$t" "$r" "$(awk -v u="$u" -v b="$b" 'BEGIN { printf "%.6f", u + b }')"
	log "rep $r build $t: untar $(printf '%.2f' "$u") s, go build $(printf '%.2f' "$b") s"
	rm -rf -- "$d"
	rss_end build "$t" "$r"
}

wl_postmark() { # wl_postmark TARGET REP
	local t=$1 r=$2 d sec cfg out
	d=$(target_dir "$t")/postmark
	cfg=$LOGS/postmark-$t-$r.cfg
	out=$LOGS/postmark-$t-$r.log
	target_remount "$t"
	rss_begin "$t"
	mkdir -p -- "$d"
	printf '%s\n' "set location $d" "set number $PM_FILES" "set transactions $PM_TX" \
		"set size $PM_MIN $PM_MAX" "set seed 42" run quit >"$cfg"
	drop
	timed sec postmark "$cfg" >"$out" 2>&1
	grep -q 'seconds total' "$out" || die "postmark did not finish (see $out)"
	record postmark "$t" "$r" "$sec"
	log "rep $r postmark $t: $(printf '%.2f' "$sec") s"
	rm -rf -- "$d"
	rss_end postmark "$t" "$r"
}

# Which workloads run on which targets: random writes only against the
# passthrough and native references.
runs_on() { # runs_on WORKLOAD TARGET
	[ "$1" != rand ] || has "$2" passthrough doppel native
}
