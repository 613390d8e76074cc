// Package blockfile serves a regular file of a volume as an NBD export: it
// implements nbd.Backend over vfs.FS, through the same calls the FUSE
// frontend makes for read, write, fsync, fallocate and lseek, so the block
// view and the file view of the file are one and the same.
//
// How the block commands map onto the namespace:
//
//	READ                   vfs.Read; bytes past the file's end read as zeros
//	WRITE                  vfs.Write into the file's write buffer; all-zero
//	                       chunks become holes in the content layer, and an
//	                       exported file is cut in fixed 4 KiB blocks, so an
//	                       all-zero 4 KiB block stores nothing
//	FUA, FLUSH             vfs.Fsync: the file's buffer committed, the
//	                       volume synced (a FLUSH on one connection makes
//	                       every connection's writes durable: they share
//	                       one buffer)
//	TRIM, WRITE_ZEROES     vfs.Fallocate(PUNCH_HOLE|KEEP_SIZE): the range's
//	                       chunk references are dropped at once and chunks
//	                       no longer referenced are punched out of the
//	                       segment files by the reclaimer
//	WRITE_ZEROES+NO_HOLE   the same punch: a copy-on-write store has no
//	                       allocation to keep (every later write stores a
//	                       new chunk whatever was there), and zeros written
//	                       out would become a hole anyway
//	BLOCK_STATUS           vfs.Lseek SEEK_DATA/SEEK_HOLE over the extent map,
//	                       holes looked for within the request's range only
//	                       (vfs.RangeSeeker)
//	CACHE                  nothing
//
// Files:
//
//	doc.go     this map
//	file.go    File: open (by inode), size (the file's, at each connection), close
//	io.go      read, write, flush, cache
//	zero.go    trim and write zeroes
//	status.go  block status from the extent map
package blockfile
