#!/usr/bin/env bash
# purge-table.sh: bench/purge.sh for every workload and backing store, as
# one Markdown table: what the backing store held before the workload, at
# its peak and after the delete, and how much of what the workload added
# came back.
#
#   sudo DOPPEL=bin/doppel bench/purge-table.sh
#
# Environment: MODES [nbd qcow2 plain], WORKLOADS [tree db images],
# DISCARD [discard] (or fstrim), and what purge.sh reads (SIZE, DB_MIB,
# IMAGE_MIB, DOPPEL).
set -euo pipefail
here=$(dirname "$0")
modes=${MODES:-nbd qcow2 plain}
workloads=${WORKLOADS:-tree db images}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

rows=()
for w in $workloads; do
	for m in $modes; do
		out=$(WORKLOAD=$w "$here/purge.sh" "$m" 2>&1) || {
			printf '%s\n' "$out" >&2
			echo "purge.sh $m with workload $w failed" >&2
			exit 1
		}
		line=$(printf '%s\n' "$out" | grep '^before=')
		before=$(sed 's/.*before=\([0-9]*\).*/\1/' <<<"$line")
		peak=$(sed 's/.*peak=\([0-9]*\).*/\1/' <<<"$line")
		after=$(sed 's/.*after=\([0-9]*\).*/\1/' <<<"$line")
		freed=$(sed 's/.*freed=\([0-9.]*\)%.*/\1/' <<<"$line")
		back95=$(sed 's/.*95% of it back \([0-9.]*\) s.*/\1/' <<<"$line")
		settled=$(sed 's/.*last change seen \([0-9.]*\) s.*/\1/' <<<"$line")
		rows+=("| $w | $m | $(mib "$before") | $(mib "$peak") | $(mib "$after") | $freed % | $back95 s | $settled s |")
		echo "$w $m: $line" >&2
	done
done
echo "| workload | backing store | before (MiB) | peak (MiB) | after delete (MiB) | recovered | 95 % of it back after the delete began | last change seen |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "DISCARD=${DISCARD:-discard} SIZE=${SIZE:-1G} DB_MIB=${DB_MIB:-100} IMAGE_MIB=${IMAGE_MIB:-64}; $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
