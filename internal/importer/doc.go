// Package importer copies a host directory tree (or a single file) into a
// doppel volume through its vfs.FS and vfs.FileCreator, in process: the
// CLI uses it on an unmounted store, the daemon on its mounted volume. No
// FUSE round trip is involved either way.
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
// error, a file that changed type or shrank during the walk) is a failure
// of that entry only. Nothing of it is left in the volume (the volume
// removes a file whose data failed halfway), its other hard links are
// reported too, and the import goes on with the rest; the caller reports
// every failure at the end and exits non-zero. An error of the volume
// itself (no space, I/O error of the store) stops the import at once: the
// entries already imported stay and the error says so. So does an
// interruption. Extended attributes that cannot be read or set are
// warnings.
//
// Speed: one walker lists directories and creates directories, symlinks
// and special files; regular files go to Jobs workers, each handing one
// file at a time to the volume's vfs.FileCreator, which reads the data
// ranges itself in large windows and cuts, hashes, stores and commits
// them pipelined, with no write buffer and one transaction for a small
// file. Hard links are made once the walk and the files are done. A
// concurrent, cheap pass counts SRC for the progress totals.
package importer
