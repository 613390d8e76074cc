package nbd

import (
	"net"
	"sync"
	"time"
)

// ClientInfo describes one client connection in transmission phase.
type ClientInfo struct {
	Export      string
	RemoteAddr  string
	ConnectedAt time.Time
	TLS         bool // the connection runs through TLS
}

// clientRegistry tracks the connections in transmission phase, per export,
// so that callers can list who uses an export (for example before removing
// it).
type clientRegistry struct {
	mu      sync.Mutex
	nextID  uint64
	clients map[uint64]ClientInfo
}

func (r *clientRegistry) add(export string, conn net.Conn, overTLS bool) (id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clients == nil {
		r.clients = make(map[uint64]ClientInfo)
	}
	r.nextID++
	addr := ""
	if a := conn.RemoteAddr(); a != nil {
		addr = a.String()
	}
	r.clients[r.nextID] = ClientInfo{Export: export, RemoteAddr: addr, ConnectedAt: time.Now(), TLS: overTLS}
	return r.nextID
}

func (r *clientRegistry) remove(id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.clients, id)
}

// list returns the clients of one export, or of all exports when export is
// nil.
func (r *clientRegistry) list(export *string) []ClientInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ClientInfo
	for _, c := range r.clients {
		if export == nil || c.Export == *export {
			out = append(out, c)
		}
	}
	return out
}
