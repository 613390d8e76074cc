# shellcheck shell=bash
# The systems bench/dedup/run.sh compares. Sourced by run.sh, which sets
# WORK, LOGS, DOPPEL, BLOCKDEDUPE, the MOUNTS and LOOPS arrays (cleaned up by its trap)
# and defines log, timed and record. Every run_* function takes the dataset
# name and its directory, measures one system on a fresh copy and records
# one result row:
#   record DATASET SYSTEM MODE BEFORE DATA TOTAL SECONDS COPY_SECONDS
# BEFORE: bytes on disk before any dedupe (- if not applicable); DATA: file
# content on disk afterwards; TOTAL: everything the dataset takes on disk
# afterwards (content and metadata); SECONDS: wall time of the import or
# backup, or of the dedupe tool (hashing and deduping); COPY_SECONDS: for
# a file system, the cp -a into it before the dedupe (else -).

# json_num FIELD: a numeric field of one-field-per-line JSON on stdin.
json_num() { sed -n "s/^[[:space:]]*\"$1\": \\([0-9.]*\\),\\{0,1\\}\$/\\1/p" | head -1; }

# warm DIR: reads every file once, so that timed runs read from the page
# cache (holes cost nothing).
warm() { find "$1" -type f -exec cat {} + >/dev/null; }

# run_doppel DATASET SRC POLICY: doppel import into a fresh volume.
run_doppel() {
	local ds=$1 src=$2 policy=$3 store=$WORK/doppel-store json t
	rm -rf -- "$store"
	"$DOPPEL" init --store "$store" --chunking "$policy" >>"$LOGS/doppel.log"
	warm "$src"
	t=$(timed "$LOGS/doppel.log" "$DOPPEL" import --quiet --store "$store" "$src" /)
	json=$("$DOPPEL" df --json --store "$store")
	printf '%s\n' "$json" >"$LOGS/doppel-df-$ds-${policy//[:\/]/_}.json"
	local alloc meta
	alloc=$(json_num allocated_bytes <<<"$json")
	meta=$(json_num meta_bytes <<<"$json")
	record "$ds" doppel "import, ${policy/cdc/cdc 16K/64K/256K}" - "$alloc" $((alloc + meta)) "$t" -
	rm -rf -- "$store"
}

# make_fs TYPE SIZE_BYTES: a fresh TYPE file system on a sparse loop image,
# mounted on $WORK/mnt; prints nothing.
make_fs() {
	local type=$1 size=$2 img=$WORK/$1.img dev
	rm -f -- "$img"
	truncate -s "$size" "$img"
	case $type in
	btrfs) mkfs.btrfs -q -f "$img" >>"$LOGS/mkfs.log" 2>&1 ;;
	xfs) mkfs.xfs -q -f "$img" >>"$LOGS/mkfs.log" 2>&1 ;; # reflink=1 is the default
	esac
	dev=$(losetup --find --show "$img")
	LOOPS+=("$dev")
	mkdir -p -- "$WORK/mnt"
	mount "$dev" "$WORK/mnt"
	MOUNTS+=("$WORK/mnt")
}

# drop_fs: unmounts and detaches what make_fs set up.
drop_fs() {
	umount "$WORK/mnt"
	unset 'MOUNTS[-1]'
	losetup -d "${LOOPS[-1]}"
	unset 'LOOPS[-1]'
	rm -f -- "$WORK"/*.img
}

# remount_fs: unmount and mount again, so that everything the dedupe
# freed is committed and accounted (btrfs frees extents in later
# transactions).
remount_fs() {
	umount "$WORK/mnt"
	mount "${LOOPS[-1]}" "$WORK/mnt"
}

# fs_used TYPE: "DATA TOTAL" bytes in use on $WORK/mnt, after a sync.
# btrfs: its data and metadata accounting (one copy of DUP metadata); XFS
# has no separate data figure: DATA is the sum of the files' blocks (before
# any sharing, so it is only meaningful before a dedupe).
fs_used() {
	local mnt=$WORK/mnt
	sync -f "$mnt"
	case $1 in
	btrfs)
		btrfs filesystem sync "$mnt" >/dev/null
		btrfs filesystem usage -b "$mnt" 2>/dev/null | awk '
			/^(Data|Metadata|System),/ {
				for (i = 1; i <= NF; i++) if ($i ~ /^Used:/) { sub(/^Used:/, "", $i); used = $i + 0 }
				if ($1 ~ /^Data,/) data += used; total += used
			}
			END { printf "%d %d\n", data, total }'
		;;
	xfs)
		local blocks total
		blocks=$(find "$mnt" -type f -printf '%b\n' | awk '{ s += $1 } END { printf "%d", s * 512 }')
		total=$(stat -f -c '%b %f %S' "$mnt" | awk '{ printf "%d", ($1 - $2) * $3 }')
		echo "$blocks $total"
		;;
	esac
}

# run_fs DATASET SRC TYPE MODE: copy SRC onto a fresh TYPE file system and
# dedupe it in MODE:
#   default  duperemove -dr: 128 KiB blocks; it dedupes extents (and whole
#            files) whose hashes match, not parts of them
#   block4k  duperemove -dr -b 4096 --dedupe-options=same,partial: its
#            block mode, which also compares parts of extents
#   file     whole files: fdupes -r | duperemove -b 4096 --fdupes
#   blocks   bench/cmd/blockdedupe: every 4 KiB block that occurred before
#            is shared with its first occurrence (FIDEDUPERANGE)
# duperemove skips files smaller than its block size in every mode.
run_fs() {
	local ds=$1 src=$2 type=$3 mode=$4 data_bytes label t t_copy
	local mnt=$WORK/mnt dir
	data_bytes=$(du -sB1 "$src" | cut -f1)
	make_fs "$type" $((data_bytes * 2 + (1 << 30)))
	dir=$mnt/${src##*/}
	local empty before after
	empty=$(fs_used "$type")
	warm "$src"
	# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
	t_copy=$(timed "$LOGS/cp.log" sh -c 'cp -a --sparse=always "$1" "$2/" && sync -f "$2"' cp "$src" "$mnt")
	before=$(fs_used "$type")
	rm -f -- "$WORK/duperemove.hash"
	local dr=(duperemove -dr -q "--hashfile=$WORK/duperemove.hash")
	case $mode in
	default)
		label="duperemove -dr (128K, extents)"
		t=$(timed "$LOGS/duperemove.log" "${dr[@]}" --dedupe-options=same "$dir")
		;;
	block4k)
		label="duperemove -b 4K, partial"
		t=$(timed "$LOGS/duperemove.log" "${dr[@]}" -b 4096 --dedupe-options=same,partial "$dir")
		;;
	file)
		label="fdupes + duperemove (whole files)"
		# shellcheck disable=SC2016 # $1 is the inner shell's
		t=$(timed "$LOGS/duperemove.log" sh -c 'fdupes -r -q "$1" | duperemove -q -b 4096 -d --fdupes' fdupes "$dir")
		;;
	blocks)
		label="blockdedupe (every 4K block)"
		t=$(timed "$LOGS/blockdedupe.log" "$BLOCKDEDUPE" "$dir")
		;;
	*) die "unknown mode in BENCH_MODES: $mode" ;;
	esac
	remount_fs
	after=$(fs_used "$type")
	local e_data e_total b_data b_total a_data a_total
	read -r e_data e_total <<<"$empty"
	read -r b_data b_total <<<"$before"
	read -r a_data a_total <<<"$after"
	if [ "$type" = xfs ]; then
		# Metadata (inodes, directories, btrees) is what the copy took
		# beyond its files' blocks; a dedupe barely changes it.
		a_data=$((a_total - (b_total - b_data)))
		e_data=0
	fi
	record "$ds" "$type" "$label" $((b_total - e_total)) $((a_data - e_data)) $((a_total - e_total)) "$t" "$t_copy"
	drop_fs
}

# run_throughput DATASET SRC REPS: ingest speed alone, interleaved and
# repeated so that the load of a shared machine hits all alike: doppel
# import (cdc and fixed 4K, each into a fresh volume) against the hashing
# pass of duperemove (default and 4 KiB partial, without -d, each with a
# fresh hash file) and of blockdedupe (-n), on one btrfs copy. Appends
# "DATASET WHAT SECONDS..." lines to THROUGHPUT.
run_throughput() {
	local ds=$1 src=$2 reps=$3 rep data_bytes mnt=$WORK/mnt dir
	local -A times=()
	local order=("doppel import, cdc" "doppel import, fixed:4K" "duperemove hashing, 128K (default)"
		"duperemove hashing, 4K partial" "blockdedupe hashing, 4K")
	data_bytes=$(du -sB1 "$src" | cut -f1)
	make_fs btrfs $((data_bytes * 2 + (1 << 30)))
	cp -a --sparse=always "$src" "$mnt/"
	sync -f "$mnt"
	dir=$mnt/${src##*/}
	local dr=(duperemove -r -q "--hashfile=$WORK/duperemove.hash")
	for ((rep = 1; rep <= reps; rep++)); do
		local policy store=$WORK/doppel-store
		for policy in cdc fixed:4K; do
			rm -rf -- "$store"
			"$DOPPEL" init --store "$store" --chunking "$policy" >>"$LOGS/doppel.log"
			warm "$src"
			times["doppel import, $policy"]+=" $(timed "$LOGS/doppel.log" "$DOPPEL" import --quiet --store "$store" "$src" /)"
		done
		rm -rf -- "$store"
		warm "$dir"
		rm -f -- "$WORK/duperemove.hash"
		times["${order[2]}"]+=" $(timed "$LOGS/duperemove.log" "${dr[@]}" --dedupe-options=same "$dir")"
		rm -f -- "$WORK/duperemove.hash"
		times["${order[3]}"]+=" $(timed "$LOGS/duperemove.log" "${dr[@]}" -b 4096 --dedupe-options=same,partial "$dir")"
		times["${order[4]}"]+=" $(timed "$LOGS/blockdedupe.log" "$BLOCKDEDUPE" -n "$dir")"
		log "  rep $rep/$reps: $(for k in "${order[@]}"; do printf '%s %ss; ' "$k" "${times[$k]##* }"; done)"
	done
	local k
	for k in "${order[@]}"; do
		printf '%s\t%s\t%s\n' "$ds" "$k" "${times[$k]# }" >>"$THROUGHPUT"
	done
	drop_fs
}

# run_restic DATASET SRC: restic backup into a fresh repository,
# compression off (repository format 2 with --compression off).
run_restic() {
	local ds=$1 src=$2 repo=$WORK/restic-repo t total data
	rm -rf -- "$repo" "$WORK/restic-cache"
	export RESTIC_PASSWORD=doppel-bench RESTIC_CACHE_DIR=$WORK/restic-cache
	restic init -q --repo "$repo" --repository-version 2 >>"$LOGS/restic.log" 2>&1
	warm "$src"
	t=$(timed "$LOGS/restic.log" restic backup -q --repo "$repo" --compression off "$src")
	total=$(du -sB1 "$repo" | cut -f1)
	data=$(restic stats -q --repo "$repo" --mode raw-data --json | sed -n 's/.*"total_size":\([0-9]*\).*/\1/p')
	record "$ds" restic "backup, cdc 512K/1M/8M" - "$data" "$total" "$t" -
	rm -rf -- "$repo" "$WORK/restic-cache"
}
