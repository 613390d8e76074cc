// Package volume creates and opens doppel volumes. A volume is one
// directory holding everything needed to mount it:
//
//	doppel.json   format file: format version and volume UUID
//	meta/         metadata store (Pebble)
//	chunks/       chunk store (segment files)
//	lock          held (flock) by the process that has the volume open;
//	              it contains that process's PID
//	control.sock  the mounted daemon's control socket
//	daemon.log    the background daemon's log
package volume
