// Package nbd is a small NBD (Network Block Device) server: the fixed
// newstyle handshake, simple and structured replies, TRIM, WRITE_ZEROES
// (NO_HOLE, FAST_ZERO), CACHE and BLOCK_STATUS for the base:allocation
// context, written from the protocol document (doc/proto.md of
// NetworkBlockDevice/nbd). It knows nothing of doppel: an export is a name
// and a Backend.
//
// Files:
//
//	doc.go            this map
//	backend.go        Backend and its one-method capabilities, Extent
//	export.go         Export (name, backend, read-only, description) and its transmission flags
//	server.go         Server: exports, limits, Serve, ServeConn, graceful shutdown
//	clients.go        registry of connected clients per export
//	session.go        per-connection state, shutdown interrupt, error filtering
//	negotiate.go      option haggling: EXPORT_NAME, INFO/GO, LIST, ABORT,
//	                  STRUCTURED_REPLY, LIST/SET_META_CONTEXT
//	tls.go            TLS required (FORCEDTLS): what is answered before
//	                  NBD_OPT_STARTTLS, the upgrade
//	transmission.go   request reader loop, concurrency and memory bounds, request validation;
//	                  a lone short read served by the reader itself (shallowQueue)
//	workers.go        goroutines that run a connection's requests, reused
//	write_order.go    a connection's plain writes reach the backend in the order sent
//	write_direct.go   large plain writes whose payload has arrived, read by the
//	                  reader straight into the backend's memory (StreamWriter)
//	commands.go       execution of each command and its reply; extent normalisation
//	reply_writer.go   serialised, whole-message reply output; replies queued
//	                  behind each other leave in one write, a read's data by
//	                  writev from the caller's buffer
//	budget.go         byte semaphore bounding buffered payloads per connection
//	buffers.go        pooled payload buffers by power-of-two size class
//	errno.go          mapping of backend errors to NBD error values
//	wire_constants.go protocol numbers, Errno, size constraints
//	wire_handshake.go encode/decode of greeting, options and option replies
//	wire_request.go   encode/decode of the request header
//	wire_reply.go     encode of simple replies and structured reply chunks
//
// Tests: memory_backend_test.go (reference backend with an allocation map,
// and streamBackend, the same taking writes from the connection),
// client_test.go (a minimal, strict client), helpers_test.go (servers on
// pipes and Unix sockets), server_test.go, budget_test.go, workers_test.go,
// transmission_test.go,
// write_order_test.go, write_direct_test.go and reply_writer_test.go (unit tests), model_test.go (randomised
// comparison with a reference model, on both backends, replayable with -nbd.seed),
// fuzz_test.go (decoders, handshakes and whole sessions), conformance_test.go
// (nbdinfo, qemu-io, qemu-img, nbdcopy when installed), tls_test.go and
// tls_conformance_test.go (TLS, with credentials from testutil/tlstest).
//
// TLS is all or nothing per server (Server.TLSConfig): without it
// NBD_OPT_STARTTLS is answered NBD_REP_ERR_UNSUP; with it every client
// must upgrade first.
//
// Not implemented: selective TLS (some exports only), oldstyle
// negotiation, extended headers, resize, metadata contexts other than
// base:allocation, OFFSET_HOLE chunks in READ replies.
package nbd
