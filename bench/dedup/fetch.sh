#!/usr/bin/env bash
# Fetches and builds the real-data datasets of the dedup benchmark, with
# pinned versions, into a cache directory. Idempotent: what is already in
# the cache (and still matches its checksum) is not fetched again.
#
#   bench/dedup/fetch.sh [--pin] [DATASET...]     DATASET: go-releases, debian-images
#
#   go-releases    20 releases of a big Go module from the Go module proxy,
#                  unpacked one directory per release (go-releases.txt)
#   debian-images  Debian root file systems (debootstrap) as ext4 image
#                  files (debian-images.txt)
#
# Checks: each module zip against its pinned h1: hash (and, by `go mod
# download`, the Go checksum database); debootstrap checks the Debian
# Release signature and every package's SHA-256; each built image's
# package list is compared with debian-manifests/NAME.txt. A cached image
# is reused only while its SHA-256 matches the one recorded when it was
# built.
#
# --pin writes the hashes and package lists that are missing (or, for
# package lists, differ) back into bench/dedup/, to pin a new dataset.
#
# Environment (defaults in brackets):
#   DEDUP_CACHE    cache directory [/var/tmp/doppel-datasets]
#   DEBIAN_MIRROR  Debian mirror [http://deb.debian.org/debian]
#   GOPROXY        Go module proxy [https://proxy.golang.org]
#
# Needs root (debootstrap), go, debootstrap, mkfs.ext4 and unzip
# (scripts/ensure-deps.sh --dedup installs them).
set -euo pipefail

LOG_PREFIX=fetch
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"
HERE=$DOPPEL_REPO_ROOT/bench/dedup

usage() { sed -n '2,29s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

pin=0
datasets=()
for arg in "$@"; do
	case $arg in
	--pin) pin=1 ;;
	go-releases | debian-images) datasets+=("$arg") ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		usage >&2
		die "unknown argument: $arg"
		;;
	esac
done
[ ${#datasets[@]} -gt 0 ] || datasets=(go-releases debian-images)

CACHE=$(abspath "${DEDUP_CACHE:-/var/tmp/doppel-datasets}")
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p -- "$CACHE"
# One fetch at a time per cache; the lock goes with the process.
exec 9>"$CACHE/.lock"
flock -n 9 || { log "waiting for another fetch.sh on $CACHE"; flock 9; }
TMP=$CACHE/tmp
rm -rf -- "$TMP"
mkdir -p -- "$TMP"
trap 'rm -rf -- "$TMP"' EXIT

# pinned_lines FILE: the data lines of a pin file (no comments, no blanks).
pinned_lines() { grep -v -e '^#' -e '^[[:space:]]*$' "$1"; }

# json_field NAME: the string field NAME of `go mod download -json` output.
json_field() { sed -n "s/^[[:space:]]*\"$1\": \"\\(.*\\)\",\\{0,1\\}\$/\\1/p"; }

fetch_go_releases() {
	local list=$HERE/go-releases.txt out=$CACHE/go-releases
	local total i=0 mod ver want json zip sum dir
	command -v go >/dev/null || die "go is not in PATH"
	command -v unzip >/dev/null || die "unzip missing (scripts/ensure-deps.sh --dedup)"
	mkdir -p -- "$out"
	total=$(pinned_lines "$list" | wc -l)
	while read -r mod ver want; do
		i=$((i + 1))
		if [ -d "$out/$ver" ] && [ "$want" != - ]; then
			continue # extracted earlier from a zip that matched the pin
		fi
		log "go-releases [$i/$total] $mod@$ver"
		# Outside any module, with a private module cache; go checks the
		# zip against the checksum database (through the proxy).
		json=$(cd "$TMP" && GOMODCACHE=$CACHE/gomodcache GOFLAGS=-modcacherw \
			GOPROXY=${GOPROXY:-https://proxy.golang.org} GOSUMDB=sum.golang.org \
			GONOSUMDB="" GOPRIVATE="" GOTOOLCHAIN=local \
			go mod download -json "$mod@$ver") || die "go mod download $mod@$ver failed: $json"
		zip=$(json_field Zip <<<"$json")
		sum=$(json_field Sum <<<"$json")
		dir=$(json_field Dir <<<"$json")
		if [ ! -f "$zip" ] || [ -z "$sum" ]; then
			die "unexpected go mod download output: $json"
		fi
		if [ "$want" = - ]; then
			[ "$pin" = 1 ] || die "$mod@$ver has no pinned hash in $list (run with --pin to add $sum)"
			sed -i "s|^$mod $ver -\$|$mod $ver $sum|" "$list"
			log "pinned $mod@$ver $sum"
		elif [ "$sum" != "$want" ]; then
			die "$mod@$ver: hash $sum, pinned $want"
		fi
		# The module cache's own unpacked copy is not needed: keep the zip.
		rm -rf -- "$dir"
		rm -rf -- "${out:?}/$ver" "$TMP/unzip"
		unzip -q "$zip" -d "$TMP/unzip"
		mv -- "$TMP/unzip/$mod@$ver" "$out/$ver"
		rm -rf -- "$TMP/unzip"
	done < <(pinned_lines "$list")
	# Releases no longer in the pin file would skew the dataset.
	for dir in "$out"/*; do
		[ -e "$dir" ] || continue
		pinned_lines "$list" | awk -v v="${dir##*/}" '$2 == v { ok = 1 } END { exit !ok }' ||
			{ log "removing unpinned $dir"; rm -rf -- "$dir"; }
	done
	log "go-releases: $(find "$out" -type f | wc -l) files, $(human_bytes "$(du -sb --apparent-size "$out" | cut -f1)") in $out"
}

# uuid_for NAME: a fixed UUID derived from NAME, so that rebuilding an
# image does not change its superblock.
uuid_for() {
	local h
	h=$(printf '%s' "$1" | sha256sum | cut -c1-32)
	printf '%s-%s-%s-%s-%s\n' "${h:0:8}" "${h:8:4}" "${h:12:4}" "${h:16:4}" "${h:20:12}"
}

# build_image NAME SUITE VARIANT EXTRA SIZE_MIB
build_image() {
	local name=$1 suite=$2 variant=$3 extra=$4 size=$5
	local out=$CACHE/debian-images meta=$CACHE/debian-images.meta
	local root=$TMP/rootfs-$1 pinfile=$HERE/debian-manifests/$1.txt
	local args=() uuid used
	[ "$variant" = - ] || args+=("--variant=$variant")
	[ "$extra" = - ] || args+=("--include=$extra")
	mkdir -p -- "$CACHE/debootstrap-cache"
	log "debian-images: debootstrap ${args[*]:+${args[*]} }$suite ($name)"
	if ! debootstrap "${args[@]}" --cache-dir="$CACHE/debootstrap-cache" \
		"$suite" "$root" "$MIRROR" >"$TMP/debootstrap.log" 2>&1; then
		tail -20 "$TMP/debootstrap.log" >&2
		die "debootstrap of $name failed"
	fi
	dpkg-query --admindir="$root/var/lib/dpkg" -W -f '${Package} ${Version} ${Architecture}\n' |
		sort >"$meta/$name.packages"
	if [ ! -f "$pinfile" ]; then
		[ "$pin" = 1 ] || die "$name has no pinned package list $pinfile (run with --pin)"
		mkdir -p -- "${pinfile%/*}"
		cp -- "$meta/$name.packages" "$pinfile"
		log "pinned $(wc -l <"$pinfile") packages in $pinfile"
	elif ! cmp -s "$pinfile" "$meta/$name.packages"; then
		warn "$name: package versions differ from $pinfile (the mirror has moved on):"
		diff "$pinfile" "$meta/$name.packages" | grep '^[<>]' | head -20 >&2 || true
		if [ "$pin" = 1 ]; then cp -- "$meta/$name.packages" "$pinfile"; fi
	fi
	used=$(du -sm "$root" | cut -f1)
	[ "$used" -lt $((size * 3 / 4)) ] || die "$name: root file system ($used MiB) does not fit well into $size MiB"
	uuid=$(uuid_for "$name")
	# Fixed UUID, hash seed and time: rebuilding gives the same superblock.
	E2FSPROGS_FAKE_TIME=1700000000 mkfs.ext4 -q -F -d "$root" -L "$name" -U "$uuid" \
		-E "hash_seed=$uuid,root_owner=0:0" "$TMP/$name.img" "${size}M" >/dev/null ||
		die "mkfs.ext4 of $name failed"
	rm -rf -- "$root"
	mv -- "$TMP/$name.img" "$out/$name.img"
	(cd "$out" && sha256sum "$name.img") >"$meta/$name.img.sha256"
}

fetch_debian_images() {
	# Only the images go into the dataset directory; what is known about
	# them (package lists, checksums) goes next to it.
	local list=$HERE/debian-images.txt out=$CACHE/debian-images meta=$CACHE/debian-images.meta
	local name suite variant extra size total i=0
	[ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
	command -v debootstrap >/dev/null || die "debootstrap missing (scripts/ensure-deps.sh --dedup)"
	mkdir -p -- "$out" "$meta"
	total=$(pinned_lines "$list" | wc -l)
	while read -r name suite variant extra size; do
		i=$((i + 1))
		if [ -f "$out/$name.img" ] && [ -f "$meta/$name.img.sha256" ] &&
			(cd "$out" && sha256sum --quiet -c "$meta/$name.img.sha256" >/dev/null 2>&1); then
			continue
		fi
		log "debian-images [$i/$total] $name"
		rm -f -- "$out/$name.img" "$meta/$name.img.sha256"
		build_image "$name" "$suite" "$variant" "$extra" "$size"
	done < <(pinned_lines "$list")
	log "debian-images: $(find "$out" -name '*.img' | wc -l) images, $(human_bytes "$(du -sB1 "$out" | cut -f1)") allocated in $out"
}

for d in "${datasets[@]}"; do
	case $d in
	go-releases) fetch_go_releases ;;
	debian-images) fetch_debian_images ;;
	esac
done
