package nbd

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// testClient is a minimal NBD client written from the protocol document,
// strict about what the server sends: any reply the document forbids is
// returned as an error.
type testClient struct {
	conn net.Conn
	r    *bufio.Reader

	structured bool
	metaID     uint32
	size       uint64
	flags      uint16

	wmu     sync.Mutex
	mu      sync.Mutex
	cookie  uint64
	pending map[uint64]requestHeader
	partial map[uint64]*testReply
}

// clientConfig says what the client negotiates.
type clientConfig struct {
	export     string
	structured bool // NBD_OPT_STRUCTURED_REPLY
	meta       bool // NBD_OPT_SET_META_CONTEXT base:allocation
	exportName bool // enter with NBD_OPT_EXPORT_NAME instead of NBD_OPT_GO
	noZeroes   bool
	tls        *tls.Config // upgrade with NBD_OPT_STARTTLS first
	socket     bool        // a Unix socket pair instead of a pipe (connect)
}

// testReply is one complete reply.
type testReply struct {
	cookie  uint64
	errno   Errno
	data    []byte
	extents []wireExtent
	msg     string

	covered []span // read: content chunks seen
}

type span struct{ off, len uint64 }

// startClient performs the greeting exchange only.
func startClient(conn net.Conn, noZeroes bool) (*testClient, error) {
	c := &testClient{conn: conn, r: bufio.NewReader(conn), pending: map[uint64]requestHeader{}, partial: map[uint64]*testReply{}}
	var g [18]byte
	if _, err := io.ReadFull(c.r, g[:]); err != nil {
		return nil, err
	}
	if binary.BigEndian.Uint64(g[0:]) != magicNBD || binary.BigEndian.Uint64(g[8:]) != magicIHaveOpt {
		return nil, fmt.Errorf("bad greeting %x", g)
	}
	hs := binary.BigEndian.Uint16(g[16:])
	if hs != handshakeFixedNewstyle|handshakeNoZeroes {
		return nil, fmt.Errorf("handshake flags %#x", hs)
	}
	flags := clientFixedNewstyle
	if noZeroes {
		flags |= clientNoZeroes
	}
	_, err := conn.Write(binary.BigEndian.AppendUint32(nil, flags))
	return c, err
}

// newTestClient connects and negotiates according to cfg.
func newTestClient(conn net.Conn, cfg clientConfig) (*testClient, error) {
	c, err := startClient(conn, cfg.noZeroes)
	if err != nil {
		return nil, err
	}
	if cfg.tls != nil {
		if err := c.startTLS(cfg.tls); err != nil {
			return nil, err
		}
	}
	if cfg.structured {
		if err := c.simpleOption(optStructuredReply, nil); err != nil {
			return nil, err
		}
		c.structured = true
	}
	if cfg.meta {
		if err := c.sendOption(optSetMetaContext, metaContextData(cfg.export, metaContextBaseAllocation)); err != nil {
			return nil, err
		}
		for {
			_, typ, payload, err := c.readOptionReply()
			if err != nil {
				return nil, err
			}
			if typ == repAck {
				break
			}
			if typ != repMetaContext || len(payload) < 4 || string(payload[4:]) != metaContextBaseAllocation {
				return nil, fmt.Errorf("set meta context: reply %#x %q", typ, payload)
			}
			c.metaID = binary.BigEndian.Uint32(payload)
		}
	}
	if cfg.exportName {
		if err := c.sendOption(optExportName, []byte(cfg.export)); err != nil {
			return nil, err
		}
		n := 10
		if !cfg.noZeroes {
			n += exportNameZeroPad
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(c.r, b); err != nil {
			return nil, err
		}
		c.size, c.flags = binary.BigEndian.Uint64(b), binary.BigEndian.Uint16(b[8:])
		return c, nil
	}
	infos, err := c.infoOrGo(optGo, cfg.export, infoName, infoDescription, infoBlockSize)
	if err != nil {
		return nil, err
	}
	exp, ok := infos[infoExport]
	if !ok || len(exp) != 12 {
		return nil, fmt.Errorf("go: no valid NBD_INFO_EXPORT")
	}
	c.size, c.flags = binary.BigEndian.Uint64(exp[2:]), binary.BigEndian.Uint16(exp[10:])
	return c, nil
}

// startTLS upgrades the connection with NBD_OPT_STARTTLS.
func (c *testClient) startTLS(cfg *tls.Config) error {
	if err := c.simpleOption(optStartTLS, nil); err != nil {
		return err
	}
	conn := tls.Client(c.conn, cfg)
	if err := conn.Handshake(); err != nil {
		return err
	}
	c.conn, c.r = conn, bufio.NewReader(conn)
	return nil
}

func metaContextData(export string, queries ...string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(export)))
	b = append(b, export...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(queries)))
	for _, q := range queries {
		b = binary.BigEndian.AppendUint32(b, uint32(len(q)))
		b = append(b, q...)
	}
	return b
}

func infoData(export string, reqs ...uint16) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(export)))
	b = append(b, export...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(reqs)))
	for _, r := range reqs {
		b = binary.BigEndian.AppendUint16(b, r)
	}
	return b
}

// infoOrGo sends NBD_OPT_INFO or NBD_OPT_GO and collects the information
// replies by type; an error reply is returned as optionError.
func (c *testClient) infoOrGo(opt uint32, export string, reqs ...uint16) (map[uint16][]byte, error) {
	if err := c.sendOption(opt, infoData(export, reqs...)); err != nil {
		return nil, err
	}
	infos := map[uint16][]byte{}
	for {
		_, typ, payload, err := c.readOptionReply()
		if err != nil {
			return nil, err
		}
		switch {
		case typ == repAck:
			return infos, nil
		case typ == repInfo && len(payload) >= 2:
			infos[binary.BigEndian.Uint16(payload)] = payload
		case typ&(1<<31) != 0:
			return nil, optionError(typ)
		default:
			return nil, fmt.Errorf("unexpected reply %#x to option %d", typ, opt)
		}
	}
}

type optionError uint32

func (e optionError) Error() string { return fmt.Sprintf("option error reply %#x", uint32(e)) }

// simpleOption sends an option that is answered by a lone ACK or error.
func (c *testClient) simpleOption(opt uint32, data []byte) error {
	if err := c.sendOption(opt, data); err != nil {
		return err
	}
	_, typ, _, err := c.readOptionReply()
	if err != nil {
		return err
	}
	if typ != repAck {
		return optionError(typ)
	}
	return nil
}

func (c *testClient) sendOption(opt uint32, data []byte) error {
	b := binary.BigEndian.AppendUint64(nil, magicIHaveOpt)
	b = binary.BigEndian.AppendUint32(b, opt)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	_, err := c.conn.Write(append(b, data...))
	return err
}

func (c *testClient) readOptionReply() (opt, typ uint32, payload []byte, err error) {
	var h [20]byte
	if _, err = io.ReadFull(c.r, h[:]); err != nil {
		return
	}
	if binary.BigEndian.Uint64(h[:]) != magicOptionReply {
		return 0, 0, nil, fmt.Errorf("bad option reply magic %x", h[:8])
	}
	opt, typ = binary.BigEndian.Uint32(h[8:]), binary.BigEndian.Uint32(h[12:])
	payload = make([]byte, binary.BigEndian.Uint32(h[16:]))
	_, err = io.ReadFull(c.r, payload)
	return
}

// send issues a request and returns its cookie; safe for concurrent use.
func (c *testClient) send(typ, flags uint16, off uint64, length uint32, payload []byte) (uint64, error) {
	c.mu.Lock()
	c.cookie++
	h := requestHeader{Flags: flags, Type: typ, Cookie: c.cookie<<8 | 0xa5, Offset: off, Length: length}
	c.pending[h.Cookie] = h
	c.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.conn.Write(append(appendRequestHeader(nil, h), payload...))
	return h.Cookie, err
}

// requestTimeout bounds one round trip of the test client, so that a hung
// server fails a test instead of blocking it. Per request, not per
// connection: a long model test under the race detector on a loaded
// machine outlived a connection's deadline (CI, 2026-12-02).
const requestTimeout = 30 * time.Second

// do sends one request and waits for its reply; for sequential use.
func (c *testClient) do(typ, flags uint16, off uint64, length uint32, payload []byte) (*testReply, error) {
	c.conn.SetDeadline(time.Now().Add(requestTimeout))
	cookie, err := c.send(typ, flags, off, length, payload)
	if err != nil {
		return nil, err
	}
	r, err := c.readReply()
	if err != nil {
		return nil, err
	}
	if r.cookie != cookie {
		return nil, fmt.Errorf("reply for cookie %#x, want %#x", r.cookie, cookie)
	}
	return r, nil
}

func (c *testClient) disconnect() error {
	_, err := c.send(cmdDisc, 0, 0, 0, nil)
	return err
}

// readReply reads messages until one reply is complete and checks it
// against the rules of the protocol.
func (c *testClient) readReply() (*testReply, error) {
	for {
		var m [4]byte
		if _, err := io.ReadFull(c.r, m[:]); err != nil {
			return nil, err
		}
		switch binary.BigEndian.Uint32(m[:]) {
		case magicSimpleReply:
			return c.readSimple()
		case magicStructReply:
			r, done, err := c.readChunk()
			if err != nil || done {
				return r, err
			}
		default:
			return nil, fmt.Errorf("bad reply magic %x", m)
		}
	}
}

func (c *testClient) takePending(cookie uint64) (requestHeader, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.pending[cookie]
	if !ok {
		return h, fmt.Errorf("reply for unknown cookie %#x", cookie)
	}
	return h, nil
}

func (c *testClient) finish(cookie uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, cookie)
	delete(c.partial, cookie)
}

func (c *testClient) readSimple() (*testReply, error) {
	var b [12]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil {
		return nil, err
	}
	r := &testReply{errno: Errno(binary.BigEndian.Uint32(b[:])), cookie: binary.BigEndian.Uint64(b[4:])}
	h, err := c.takePending(r.cookie)
	if err != nil {
		return nil, err
	}
	if h.Type == cmdBlockStatus && r.errno == 0 {
		return nil, fmt.Errorf("simple success reply to BLOCK_STATUS")
	}
	if h.Type == cmdRead && c.structured {
		return nil, fmt.Errorf("simple reply to READ after structured replies were negotiated")
	}
	if h.Type == cmdRead && r.errno == 0 {
		r.data = make([]byte, h.Length)
		if _, err := io.ReadFull(c.r, r.data); err != nil {
			return nil, err
		}
	}
	c.finish(r.cookie)
	return r, nil
}

func (c *testClient) readChunk() (*testReply, bool, error) {
	if !c.structured {
		return nil, false, fmt.Errorf("structured chunk without negotiation")
	}
	var b [16]byte
	if _, err := io.ReadFull(c.r, b[:]); err != nil {
		return nil, false, err
	}
	flags, typ := binary.BigEndian.Uint16(b[0:]), binary.BigEndian.Uint16(b[2:])
	cookie, length := binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint32(b[12:])
	h, err := c.takePending(cookie)
	if err != nil {
		return nil, false, err
	}
	if length > MaxPayload+64 || (typ != replyTypeOffsetData && length > 8<<20+4) {
		return nil, false, fmt.Errorf("chunk of %d bytes", length)
	}
	payload := make([]byte, length)
	if _, err := io.ReadFull(c.r, payload); err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	r := c.partial[cookie]
	if r == nil {
		r = &testReply{cookie: cookie}
		c.partial[cookie] = r
	}
	c.mu.Unlock()
	done := flags&replyFlagDone != 0
	switch typ {
	case replyTypeNone:
		if length != 0 || !done {
			return nil, false, fmt.Errorf("NONE chunk with length %d flags %#x", length, flags)
		}
	case replyTypeOffsetData:
		if h.Type != cmdRead || length < 9 {
			return nil, false, fmt.Errorf("OFFSET_DATA of %d bytes for command %d", length, h.Type)
		}
		off, n := binary.BigEndian.Uint64(payload), uint64(length-8)
		if off < h.Offset || off+n > h.Offset+uint64(h.Length) {
			return nil, false, fmt.Errorf("OFFSET_DATA [%d,+%d) outside request [%d,+%d)", off, n, h.Offset, h.Length)
		}
		for _, s := range r.covered {
			if off < s.off+s.len && s.off < off+n {
				return nil, false, fmt.Errorf("overlapping content chunks")
			}
		}
		if h.Flags&cmdFlagDF != 0 && len(r.covered) > 0 {
			return nil, false, fmt.Errorf("second content chunk despite DF")
		}
		r.covered = append(r.covered, span{off, n})
		if r.data == nil {
			r.data = make([]byte, h.Length)
		}
		copy(r.data[off-h.Offset:], payload[8:])
	case replyTypeBlockStatus:
		if h.Type != cmdBlockStatus || length < 12 || (length-4)%8 != 0 {
			return nil, false, fmt.Errorf("BLOCK_STATUS of %d bytes for command %d", length, h.Type)
		}
		if id := binary.BigEndian.Uint32(payload); id != c.metaID {
			return nil, false, fmt.Errorf("BLOCK_STATUS for context %d, selected %d", id, c.metaID)
		}
		var sum uint64
		for p := payload[4:]; len(p) > 0; p = p[8:] {
			e := wireExtent{Length: binary.BigEndian.Uint32(p), Flags: binary.BigEndian.Uint32(p[4:])}
			if e.Length == 0 {
				return nil, false, fmt.Errorf("empty extent")
			}
			if len(r.extents) > 0 && sum >= uint64(h.Length) {
				return nil, false, fmt.Errorf("extent after the requested length")
			}
			sum += uint64(e.Length)
			r.extents = append(r.extents, e)
		}
		if h.Flags&cmdFlagReqOne != 0 && (len(r.extents) != 1 || r.extents[0].Length > h.Length) {
			return nil, false, fmt.Errorf("REQ_ONE answered with %v", r.extents)
		}
		if h.Offset+sum > c.size {
			return nil, false, fmt.Errorf("extents beyond the export")
		}
	case replyTypeError:
		if length < 6 {
			return nil, false, fmt.Errorf("ERROR chunk of %d bytes", length)
		}
		msgLen := uint32(binary.BigEndian.Uint16(payload[4:]))
		if msgLen > length-6 {
			return nil, false, fmt.Errorf("error message overflows chunk")
		}
		r.errno = Errno(binary.BigEndian.Uint32(payload))
		if r.errno == 0 {
			return nil, false, fmt.Errorf("ERROR chunk with errno 0")
		}
		r.msg = string(payload[6 : 6+msgLen])
	default:
		return nil, false, fmt.Errorf("unexpected chunk type %d", typ)
	}
	if !done {
		return nil, false, nil
	}
	if r.errno == 0 {
		switch h.Type {
		case cmdRead:
			var total uint64
			for _, s := range r.covered {
				total += s.len
			}
			if total != uint64(h.Length) {
				return nil, false, fmt.Errorf("read of %d answered with %d bytes", h.Length, total)
			}
			if r.data == nil {
				r.data = []byte{}
			}
		case cmdBlockStatus:
			if len(r.extents) == 0 {
				return nil, false, fmt.Errorf("block status without extents")
			}
		}
	}
	c.finish(cookie)
	return r, true, nil
}
