// Package importer copies a host directory tree (or a single file) into a
// doppel volume through its vfs.FS, in process: the CLI uses it on an
// unmounted store, the daemon on its mounted volume. No FUSE round trip is
// involved either way.
//
// What is kept: file content (holes stay holes: data ranges are found with
// SEEK_DATA/SEEK_HOLE and only they are read), modes, owners, atime and
// mtime (ctime is the import's time, as with any copy), extended attributes
// (user.*, trusted.* and security.* as the reader may list them; system.*
// ones such as POSIX ACLs are skipped with a warning, because doppel does
// not enforce ACLs), hard links (entries of SRC sharing an inode share one
// in the volume), symlinks (never followed), fifos, sockets and device
// nodes, and empty directories. Directory attributes are set after all
// their children exist, so their mtimes survive.
//
// Where it goes: DST is a path inside the volume. If DST is an existing
// directory, SRC is imported as DST/basename(SRC), like cp -a; otherwise
// DST's parent must exist and DST is created. The entry created must not
// exist: an import never replaces or merges into what the volume holds.
//
// Errors: a source entry that cannot be read (permission denied, I/O
// error, a file that changed type during the walk) is a failure of that
// entry only. It is not left in the volume (a file that failed halfway is
// unlinked, with all its hard links), it is reported with its path, and the
// import goes on with the rest; the caller reports every failure at the end
// and exits non-zero. An error of the volume itself (no space, I/O error
// of the store) stops the import at once: the entries already imported
// stay, complete or not, and the error says so. So does an interruption.
// Extended attributes that cannot be read or set are warnings.
//
// Speed: one walker lists directories and creates every entry (so hard
// links can be made at once); regular files go to Jobs workers that read
// them with large preads and write them with large sequential writes to
// the namespace, whose buffer streams complete chunks to background
// commits; the content layer cuts, hashes and stores chunks on all cores.
// A concurrent, cheap pass counts SRC for the progress totals.
package importer
