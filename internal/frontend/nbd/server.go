package nbd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"time"
)

// Limits bound what one connection may hold at once.
type Limits struct {
	// MaxInFlight is the number of requests processed concurrently per
	// connection; further requests wait in the socket.
	MaxInFlight int
	// MaxBufferBytes bounds READ and WRITE payload buffers per connection.
	// It is raised to MaxPayload if smaller, so one maximal request fits.
	MaxBufferBytes int64
	// ShutdownGrace is how long replies may take to reach a client once the
	// server shuts down; a client that stops reading is cut off after it.
	ShutdownGrace time.Duration
	// HandshakeLimit is how long a client may take from connecting to
	// entering transmission (TLS included); one that takes longer is cut
	// off, so idle connections cannot pile up (qemu-nbd's
	// --handshake-limit, with its default).
	HandshakeLimit time.Duration
}

// DefaultLimits are used for zero fields of Server.Limits.
var DefaultLimits = Limits{
	MaxInFlight:    16,
	MaxBufferBytes: 2 * MaxPayload,
	ShutdownGrace:  10 * time.Second,
	HandshakeLimit: 10 * time.Second,
}

// Server serves named exports over NBD. It knows nothing of what backs an
// export. The zero value is not usable; call NewServer.
type Server struct {
	Limits Limits
	// Logger receives one line per connection that ends in error; nil
	// discards them.
	Logger *slog.Logger
	// TLSConfig, when set, makes TLS mandatory: a client must upgrade
	// with NBD_OPT_STARTTLS before any other option (the protocol's
	// FORCEDTLS mode). Set it before Serve.
	TLSConfig *tls.Config

	mu      sync.RWMutex
	exports map[string]*Export
	clients clientRegistry
}

// NewServer returns a server without exports.
func NewServer() *Server {
	return &Server{exports: make(map[string]*Export)}
}

// AddExport offers an export to clients that connect from now on.
func (s *Server) AddExport(e Export) error {
	if e.Backend == nil {
		return fmt.Errorf("nbd: export %q has no backend", e.Name)
	}
	if len(e.Name) > maxStringLen || len(e.Description) > maxStringLen {
		return fmt.Errorf("nbd: export %q: name or description longer than %d bytes", e.Name, maxStringLen)
	}
	if e.Backend.Size() < 0 {
		return fmt.Errorf("nbd: export %q has negative size", e.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.exports[e.Name]; dup {
		return fmt.Errorf("nbd: export %q already exists", e.Name)
	}
	s.exports[e.Name] = &e
	return nil
}

// RemoveExport stops offering an export to new clients; connected clients
// keep using it until they disconnect (see Clients).
func (s *Server) RemoveExport(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.exports[name]
	delete(s.exports, name)
	return ok
}

// Clients lists the connections in transmission phase on one export.
func (s *Server) Clients(export string) []ClientInfo {
	return s.clients.list(&export)
}

// AllClients lists the connections in transmission phase on any export.
func (s *Server) AllClients() []ClientInfo {
	return s.clients.list(nil)
}

// lookupExport resolves a client's export name; the empty name is the
// default export when exactly one export exists.
func (s *Server) lookupExport(name string) *Export {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e, ok := s.exports[name]; ok {
		return e
	}
	if name == "" && len(s.exports) == 1 {
		for _, e := range s.exports {
			return e
		}
	}
	return nil
}

// exportList returns the exports sorted by name, for NBD_OPT_LIST.
func (s *Server) exportList() []*Export {
	s.mu.RLock()
	defer s.mu.RUnlock()
	list := make([]*Export, 0, len(s.exports))
	for _, e := range s.exports {
		list = append(list, e)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	return list
}

func (s *Server) limits() Limits {
	l := s.Limits
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = DefaultLimits.MaxInFlight
	}
	if l.MaxBufferBytes <= 0 {
		l.MaxBufferBytes = DefaultLimits.MaxBufferBytes
	}
	if l.MaxBufferBytes < MaxPayload {
		l.MaxBufferBytes = MaxPayload
	}
	if l.ShutdownGrace <= 0 {
		l.ShutdownGrace = DefaultLimits.ShutdownGrace
	}
	if l.HandshakeLimit <= 0 {
		l.HandshakeLimit = DefaultLimits.HandshakeLimit
	}
	return l
}

// Serve accepts connections until ctx is cancelled or the listener fails.
// On cancellation it stops accepting, lets every connection finish its
// in-flight requests and flush, and returns nil once all are closed.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(ctx, func() { l.Close() })
	var conns sync.WaitGroup
	defer func() {
		// Whatever ended the accept loop, connections are shut down
		// gracefully before Serve returns.
		cancel()
		stop()
		conns.Wait()
	}()
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			if err := s.ServeConn(ctx, conn); err != nil && s.Logger != nil {
				s.Logger.Info("nbd connection ended", "remote", conn.RemoteAddr(), "err", err)
			}
		}()
	}
}

// ServeConn runs one connection to its end and closes it. It returns nil
// when the client disconnected cleanly or the server shut down, and the
// protocol or I/O error otherwise. Cancelling ctx shuts the connection down
// gracefully: no new request is read, in-flight requests are answered, the
// export is flushed.
func (s *Server) ServeConn(ctx context.Context, conn net.Conn) error {
	defer conn.Close()
	sess := newSession(s, conn)
	stop := context.AfterFunc(ctx, sess.interrupt)
	defer stop()

	exp, err := sess.negotiateWithin(sess.limits.HandshakeLimit)
	if err != nil || exp == nil {
		return sess.filterErr(err)
	}
	id := s.clients.add(exp.Name, conn, sess.tlsActive)
	defer s.clients.remove(id)
	return sess.filterErr(sess.transmit())
}

// errClientGone marks an orderly end that is not worth reporting.
var errClientGone = errors.New("nbd: client disconnected")
