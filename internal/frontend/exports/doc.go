// Package exports runs `doppel nbd`'s servers inside whatever process has
// the volume open (its mount daemon, or the command itself on an unmounted
// store): it resolves or creates the files, opens them as block devices
// (blockfile), listens, serves them with the nbd package until the
// request's context ends, then flushes and closes them. The Registry keeps
// the running servers for `doppel status`.
//
// Files:
//
//	doc.go      this map
//	registry.go Registry: Serve one request, the running servers' status
//	files.go    the request's files: resolved by path, created, opened
//	listen.go   the listen address (unix:PATH, tcp:HOST:PORT)
//	tls.go      TLS: the server certificate (re-read when renewed), client CAs
package exports
