package volume

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil"
)

// s3Counter is an HTTP proxy in front of the S3 server that counts the
// requests a volume sends through it, by method: the store's requests
// cannot be counted from outside the SDK otherwise. The proxy keeps the
// Host header the client signed, so signatures still verify.
type s3Counter struct {
	srv                     *httptest.Server
	puts, gets, dels, other atomic.Int64
}

func newS3Counter(t testing.TB, endpoint string) *s3Counter {
	t.Helper()
	target, err := url.Parse(endpoint)
	testutil.Check(t, err)
	c := &s3Counter{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			c.puts.Add(1)
		case http.MethodGet, http.MethodHead:
			c.gets.Add(1)
		case http.MethodDelete:
			c.dels.Add(1)
		default:
			c.other.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// s3Requests is a reading of an s3Counter.
type s3Requests struct{ puts, gets, dels, other int64 }

func (c *s3Counter) read() s3Requests {
	return s3Requests{c.puts.Load(), c.gets.Load(), c.dels.Load(), c.other.Load()}
}

func (r s3Requests) total() int64 { return r.puts + r.gets + r.dels + r.other }

func (r s3Requests) minus(o s3Requests) s3Requests {
	return s3Requests{r.puts - o.puts, r.gets - o.gets, r.dels - o.dels, r.other - o.other}
}
