# shellcheck shell=bash
# shellcheck disable=SC2154 # cmdline and the settings are bench/clone.sh's
# The Markdown report of bench/clone.sh, which sources this file and
# calls report once the results (RES) are in.

# dur SECONDS: "0.41 ms", "12.3 ms", "8.20 s".
dur() {
	awk -v s="$1" 'BEGIN {
		if (s < 0.01) printf "%.2f ms", s * 1000
		else if (s < 1) printf "%.1f ms", s * 1000
		else printf "%.2f s", s }'
}

# med KEY: the median of RES[KEY], formatted, or "n/a".
med() {
	[ -n "${RES[$1]:-}" ] || { echo "n/a"; return; }
	dur "$(median "${RES[$1]}")"
}

# runs KEY: every value of RES[KEY], formatted, in order.
runs() {
	local v out=""
	for v in ${RES[$1]:-}; do out+="${out:+, }$(dur "$v")"; done
	echo "${out:-n/a}"
}

thousands() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }

# rate KEY N: "8.20 s (12,195 files/s)".
rate() {
	[ -n "${RES[$1]:-}" ] || { echo "n/a"; return; }
	local m
	m=$(median "${RES[$1]}")
	echo "$(dur "$m") ($(thousands "$(awk -v n="$2" -v s="$m" 'BEGIN { printf "%.0f", n / s }')") files/s)"
}

# verdict KEY LIMIT: whether the median of RES[KEY] is at most LIMIT.
verdict() {
	[ -n "${RES[$1]:-}" ] || { echo "not measured"; return; }
	awk -v m="$(median "${RES[$1]}")" -v l="$2" 'BEGIN { print (m <= l ? "**met**" : "**not met**") }'
}

latency_table() {
	local n
	echo "| files | doppel clone --lazy | doppel snapshot | doppel clone (default, 1 run) | doppel --help | cp -a --reflink=always, XFS | cp -a --reflink=always, btrfs | btrfs subvolume snapshot | fuse-overlayfs mount |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	for n in $SIZES; do
		echo "| $(thousands "$n") | $(med "lazy-ns|$n") / $(med "lazy-wall|$n") | $(med "snap-ns|$n") / $(med "snap-wall|$n") | $(med "full-ns|$n") / $(med "full-wall|$n") | $(med "cli|$n") | $(rate "cp-xfs|$n" "$n") | $(rate "cp-btrfs|$n" "$n") | $(med "btrfs-snap|$n") | $(med "overlay|$n") |"
	done
	echo
	echo "doppel cells: doppel's own figure (\`elapsed_ns\` of \`doppel clone --json\`, measured in"
	echo "the daemon) / wall time of the CLI call. \`doppel --help\` is the CLI's start-up alone"
	echo "(no call to the daemon): the floor under the wall time of any doppel command."
	echo "Medians of $REPS runs ($COPY_REPS for the cp copies); every run is listed below."
	echo
	echo "The wall times above go through the bench's \`timeout\` wrapper and shell."
	echo "hyperfine (\`hyperfine -N\`: no shell, 3 warm-up runs) measures \`doppel clone --lazy\`"
	echo "as a user runs it:"
	echo
	echo "| files | doppel clone --lazy, hyperfine median | runs |"
	echo "|---:|---:|---:|"
	for n in $SIZES; do
		echo "| $(thousands "$n") | $(med "hf-lazy|$n") | ${RES[hf-lazy-runs|$n]:-n/a} |"
	done
	echo
	echo "Target ≤ 10 ms median at each size:"
	echo
	for n in $SIZES; do
		echo "- $(thousands "$n") files: doppel's figure $(verdict "lazy-ns|$n" 0.010) (lazy clone), $(verdict "snap-ns|$n" 0.010) (snapshot); CLI wall time $(verdict "hf-lazy|$n" 0.010) (lazy clone, hyperfine), $(verdict "lazy-wall|$n" 0.010) (lazy clone, through the wrapper), $(verdict "snap-wall|$n" 0.010) (snapshot, through the wrapper)."
	done
}

# space_row LABEL KEY PREV: one row of the space table, with the change
# since the point PREV.
space_row() {
	local what
	for what in meta phys inodes; do
		[ -n "${RES[space-$what|$2]:-}" ] || { echo "| $1 | n/a | n/a | n/a | |"; return; }
	done
	awk -v l="$1" -v m="${RES[space-meta|$2]}" -v p="${RES[space-phys|$2]}" -v i="${RES[space-inodes|$2]}" \
		-v pm="${RES[space-meta|$3]}" -v pp="${RES[space-phys|$3]}" -v pi="${RES[space-inodes|$3]}" 'BEGIN {
		printf "| %s | %d (%+d) | %d (%+d) | %d (%+d) | ", l, m, m - pm, p, p - pp, i, i - pi }'
	echo "${RES[space-sub|$2]:-} |"
}

space_table() {
	local n
	n=$(thousands "$SPACE_FILES")
	echo "| point | volume meta_bytes on disk (change) | volume physical_bytes (change) | volume inodes (change) | the clone's own metadata records, bytes |"
	echo "|---|---:|---:|---:|---:|"
	space_row "before the first clone" before-one before-one
	space_row "after a lazy clone of the $n-file tree" clone-one before-one
	space_row "after appending a line to $CHANGED files of one directory of the clone" changed-one clone-one
	space_row "before the second clone" before-spread before-spread
	space_row "after a second lazy clone" clone-spread before-spread
	space_row "after appending a line to $CHANGED files spread one per directory" changed-spread clone-spread
}

materialize_table() {
	local n
	echo "| files | doppel clone returned in | materialized after | inodes in the volume then |"
	echo "|---:|---:|---:|---:|"
	for n in $MAT_SIZES; do
		[ -n "${RES[mat|$n]:-}" ] || continue
		echo "| $(thousands "$n") | $(med "full-ns|$n") / $(med "full-wall|$n") | $(dur "${RES[mat|$n]}") ($(thousands "$(awk -v n="$n" -v s="${RES[mat|$n]}" 'BEGIN { printf "%.0f", n / s }')") files/s) | $(thousands "${RES[mat-inodes|$n]}") |"
	done
}

# pair_ratios KEY_A KEY_B: the ratios B/A of the runs of the same
# repetition.
pair_ratios() {
	local a b
	read -r -a a <<<"${RES[$1]}"
	read -r -a b <<<"${RES[$2]}"
	for i in "${!a[@]}"; do awk -v a="${a[$i]}" -v b="${b[$i]}" 'BEGIN { printf "%.4f ", b / a }'; done
}

work_table() {
	local w o c p
	echo "| workload | origin (median) | lazy clone (median) | clone / origin (medians) | clone / origin (median of the repetitions' ratios) | target ≤ 1.05 |"
	echo "|---|---:|---:|---:|---:|---|"
	for w in "${WORKLOADS[@]}"; do
		[ -n "${RES[work-$w|origin]:-}" ] || continue
		o=$(median "${RES[work-$w|origin]}")
		c=$(median "${RES[work-$w|clone]}")
		p=$(median "$(pair_ratios "work-$w|origin" "work-$w|clone")")
		awk -v w="$w" -v o="$o" -v c="$c" -v p="$p" 'BEGIN {
			r = c / o; printf "| %s | %.2f s | %.2f s | %.3f | %.3f | %s |\n", w, o, c, r, p, (r <= 1.05 && p <= 1.05 ? "met" : "not met") }'
	done
}

raw_runs() {
	local k
	for k in $(printf '%s\n' "${!RES[@]}" | sort -t'|' -k1,1 -k2,2n); do
		case $k in space-* | mat* | import* | work-files) continue ;; esac
		echo "- \`$k\`: $(runs "$k")"
	done
}

report() {
	echo "# Clone benchmarks"
	echo
	echo "Generated by \`bench/clone.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'). Issue 5's figures:"
	echo "clone latency, the space a clone costs, background materialization, and"
	echo "workloads inside a lazy clone."
	if part latency; then
		echo
		echo "## Clone latency"
		echo
		latency_table
		echo
		echo "References, not measured here: Prism clones 170k files in 0.18 s; JuiceFS \`clone\`"
		echo "copies about 218 entries/s."
	fi
	if part space; then
		echo
		echo "## Space of a clone ($(thousands "$SPACE_FILES") files)"
		echo
		space_table
		echo
		echo "Volume figures: \`doppel df --json MNT\` after \`doppel sync\`. meta_bytes is the metadata"
		echo "store's size on disk (Pebble tables and log): it also moves with memtable flushes and"
		echo "compactions, so small changes are noise; the inode count is exact. The last column is"
		echo "\`doppel df --json CLONE\`'s meta_bytes: the clone's own records (inodes, entries,"
		echo "back-references, extents, xattrs; uncompressed), not what it reads through its pin."
		echo "A lazy clone is one stub inode. A directory of the clone gets its own entries (new"
		echo "stubs: $(thousands "$PER_DIR") per directory here) when something in it changes or it is listed,"
		echo "and a changed file gets its own extents (chunk references, no data copied)."
	fi
	if part materialize && [ -n "$(materialize_table | sed -n 3p)" ]; then
		echo
		echo "## Background materialization"
		echo
		materialize_table
		echo
		echo "Timed from the start of \`doppel clone\` until the source's last file in the"
		echo "materializer's order (breadth first, by name) has one more chunk reference,"
		echo "polled every 0.5 s with \`doppel stat --json\`."
	fi
	if part workload; then
		echo
		echo "## Workloads inside a lazy clone"
		echo
		work_table
		echo
		echo "Medians of $WORK_REPS interleaved runs. The origin: the doppel source at this commit"
		echo "with vendored dependencies ($(thousands "${RES[work-files]:-0}") files). Postmark: $PM_FILES files of 500-10,000 B"
		echo "in 10 subdirectories, $PM_TX transactions. Builds: \`go build $BUILD_PKGS\`"
		echo "(-mod=vendor) with an empty GOCACHE and GOTMPDIR inside the target."
		echo "Prism's reference: 4.6 % slower in a lazy clone, no difference in a full clone."
	fi
	echo
	echo "## All runs"
	echo
	raw_runs
	echo
	machine_section "$BENCH_DIR" "$cmdline" \
		"as root; \`make bench-clone\` runs it too" "| Tools | $(tool_versions) |"
}

tool_versions() {
	echo "$(cp --version | head -1); $(mkfs.xfs -V 2>/dev/null | head -1); $(btrfs --version 2>/dev/null | head -1);" \
		"$(fuse-overlayfs --version 2>/dev/null | sed -n 's/^fuse-overlayfs: version/fuse-overlayfs/p' | head -1);" \
		"postmark $(printf 'quit\n' | postmark 2>/dev/null | sed -n 's/^PostMark v\([0-9.]*\).*/\1/p')"
}
