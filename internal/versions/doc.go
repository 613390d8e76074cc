// Package versions keeps the past of a volume readable: pinned versions,
// retained old records and readers of the volume as it stood at a pin.
//
// A pin at version E covers one subtree (its root as of E). While it
// exists, the first change after E to a record of an inode that was below
// the root at E keeps the record's old value, or the fact that it did not
// exist, as a retained version under the key (RetainedKey(key, E)). Only
// the newest pin that covers the inode gets one: an older pin reads the
// first retained version at or after its own version, which is the value
// the record had at the older pin too, because any change in between would
// have left a retained version for a pin in between. For the same reason
// a change retains nothing if the key already has a version at or after
// the newest covering pin (releasing a pin may move a version to an
// older pin that does not cover the key).
//
// AsOf reads through retained versions to the live records, so a reader of
// version E sees exactly what existed at E. Retained extents hold a
// reference to their chunk, so the data a pin needs is never freed.
// Releasing a pin moves each of its retained versions to the next older
// pin that still needs it, or drops it and its chunk reference.
//
// This is the machinery under clones and snapshots (package namespace);
// it knows keys and records, not files. It owns the pin records too
// (pinrecords.go: AddPin, Unhold, LoadPin), writing each both to the
// store and to the retainer's memory in one transaction, undone with it.
package versions
