# shellcheck shell=bash
# shellcheck disable=SC2034 # RES is bench/clone.sh's associative array
# The workload part of bench/clone.sh, which sources this file: postmark,
# untar-and-build and a build in place, each inside a fresh lazy clone and
# inside its origin on the same doppel volume, interleaved.
#
# The origin is the doppel source tree at HEAD with its dependencies
# vendored (BENCH_DIR/build-src.tar, unpacked into MNT/origin/doppel).
# One untimed run of each workload in a scratch directory warms the page
# cache (Go's own sources, the tarball). Then every repetition makes a new
# lazy clone of the origin (not timed) and runs each workload on both
# sides, alternating which side goes first:
#   postmark     Debian's postmark in a new directory: BENCH_PM_FILES files
#                of 500-10,000 bytes in 10 subdirectories, BENCH_PM_TX
#                transactions
#   untar-build  tar -x of the tarball into a new directory, then go build
#                BENCH_BUILD_PKGS there, with GOCACHE and GOTMPDIR inside it
#   build        go build BENCH_BUILD_PKGS in the existing tree (in the
#                clone: files the clone still reads through its pin), with
#                GOCACHE and GOTMPDIR in a new directory beside it
# Each timed command creates its own directories, so in the clone the
# materialization of the directories it touches is timed too. The origin's
# new directories are removed after every repetition.

TARBALL=$BENCH_DIR/build-src.tar

# build_tarball: the doppel source at HEAD, with vendored dependencies so
# that it builds offline.
build_tarball() {
	local tmp
	tmp=$(mktemp -d "$BENCH_DIR/tarball.XXXXXX")
	git -C "$DOPPEL_REPO_ROOT" archive --prefix=doppel/ HEAD | tar -x -C "$tmp"
	(cd "$tmp/doppel" && go mod vendor) || die "go mod vendor failed"
	tar -c -f "$TARBALL" -C "$tmp" doppel
	rm -rf -- "$tmp"
}

# go_env: the environment of the build workloads; GOCACHE and GOTMPDIR
# are set per run.
go_env=(env GOFLAGS="-mod=vendor -buildvcs=false" GOTOOLCHAIN=local GOPROXY=off GOWORK=off)

# run_workload WORKLOAD SIDE DIR REP: times WORKLOAD in DIR and records it.
run_workload() {
	local w=$1 side=$2 dir=$3 rep=$4 t cfg
	"$DOPPEL" sync "$MNT"
	sync
	case $w in
	postmark)
		cfg=$LOGS/postmark-$side-$rep.cfg
		printf '%s\n' "set location $dir/pm-$rep" "set number $PM_FILES" "set transactions $PM_TX" \
			"set size 500 10000" "set subdirectories 10" "set seed 42" run quit >"$cfg"
		# shellcheck disable=SC2016 # expanded by the inner shell
		timed t bash -c 'mkdir "$1" && postmark "$2"' _ "$dir/pm-$rep" "$cfg"
		;;
	untar-build)
		# shellcheck disable=SC2086,SC2016 # BUILD_PKGS is a list; $1... are the inner shell's
		timed t "${go_env[@]}" GOCACHE="$dir/ub-$rep/gocache" GOTMPDIR="$dir/ub-$rep/gotmp" bash -c \
			'mkdir -p "$GOCACHE" "$GOTMPDIR" && tar -x -f "$1" -C "$2" && cd "$2/doppel" && shift 2 && go build "$@"' \
			_ "$TARBALL" "$dir/ub-$rep" $BUILD_PKGS
		;;
	build)
		# shellcheck disable=SC2086,SC2016 # BUILD_PKGS is a list; $1... are the inner shell's
		timed t "${go_env[@]}" GOCACHE="$dir/gc-$rep/gocache" GOTMPDIR="$dir/gc-$rep/gotmp" bash -c \
			'mkdir -p "$GOCACHE" "$GOTMPDIR" && cd "$1/doppel" && shift && go build "$@"' \
			_ "$dir" $BUILD_PKGS
		;;
	esac >"$LOGS/$w-$side-$rep.log" 2>&1 || die "$w in $dir failed (see $LOGS/$w-$side-$rep.log)"
	[ "$side" = warmup ] || record "work-$w|$side" "$t"
	log "  rep $rep: $w in the $side: ${t}s"
}

workloads() {
	local rep w side sides
	log "workloads: making the origin"
	build_tarball
	volume_up work
	mkdir -- "$MNT/origin"
	tar -x -f "$TARBALL" -C "$MNT/origin"
	RES["work-files"]=$(tar -t -f "$TARBALL" | grep -cv '/$')
	mkdir -- "$MNT/warmup"
	tar -x -f "$TARBALL" -C "$MNT/warmup"
	for w in "${WORKLOADS[@]}"; do run_workload "$w" warmup "$MNT/warmup" 0; done
	rm -rf -- "$MNT/warmup"
	for ((rep = 1; rep <= WORK_REPS; rep++)); do
		"$DOPPEL" clone --lazy "$MNT/origin" "$MNT/clone-$rep" >>"$LOGS/doppel.log"
		sides="origin clone"
		[ $((rep % 2)) -eq 1 ] || sides="clone origin"
		for w in "${WORKLOADS[@]}"; do
			for side in $sides; do
				if [ "$side" = origin ]; then
					run_workload "$w" origin "$MNT/origin" "$rep"
				else
					run_workload "$w" clone "$MNT/clone-$rep" "$rep"
				fi
			done
		done
		rm -rf -- "$MNT/origin/pm-$rep" "$MNT/origin/ub-$rep" "$MNT/origin/gc-$rep"
	done
	volume_down
	rm -f -- "$TARBALL"
}
