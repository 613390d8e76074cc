package volume

// KernelReadahead is how far the kernel reads ahead of sequential readers
// of a mounted volume: one request of the largest size the mount takes
// (its MaxReadAhead and MaxWrite, 1 MiB). FUSE mounts start at 128 KiB
// whatever the daemon asks, so a cold read sends eight times as many
// requests, each waiting for the one before; on a volume with data in S3
// each of them also reads the inode and its extents from PostgreSQL.
// More than one request's worth is worse: several 1 MiB requests at once
// run ahead of the engine's own readahead (S3Readahead there), which
// looks up the chunks of a window before it fetches them, and fetch their
// chunks themselves. Cold reads, medians (docs/BENCHMARKS.md, "Kernel
// readahead of shared volumes"): 2 GiB of an embedded volume 2.11 s at
// 128 KiB, 1.74 s at 1 MiB, 1.98 s at 2 MiB; 4 GiB in S3 5.9–8.2 s at
// 8 MiB (1,049 GETs by reads ahead of the readahead), 4.3–4.7 s at 1 MiB
// (58 of them). The daemon sets it once the volume is mounted.
const KernelReadahead = 1 << 20
