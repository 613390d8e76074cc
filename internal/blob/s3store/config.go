package s3store

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Config says where a store keeps its packs and how it works.
type Config struct {
	Endpoint    string // http(s)://HOST:PORT of the S3 service
	Region      string // default us-east-1
	Bucket      string
	Prefix      string // key prefix of the volume's objects, without slashes at either end
	Credentials Credentials

	// Dir is the local store directory: the pack number file (when
	// Allocator is nil), the dead-span ledger and the read cache.
	Dir string
	// Allocator hands out pack numbers; nil means a LocalAllocator in Dir.
	Allocator Allocator
	// Dead keeps the dead-span ledger; nil means the file "dead" in Dir.
	Dead DeadStore

	// PackSize: seal a pack when the next chunk would pass it (but see
	// PutMany); default 16 MiB. A PUT costs both sides CPU per request as
	// well as per byte: 4 MiB packs took a 4 GiB write 6 % longer
	// (docs/BENCHMARKS.md, "Packs of 16 MiB").
	PackSize   int64
	Uploads    int // uploads at once; default 8
	MaxPending int // sealed packs waiting for upload before Put blocks; default 4
	Fetches    int // prefetch GETs at once; default 16
	// PrefetchBytes bounds the memory of prefetched ranges (held until
	// read or evicted); default 64 MiB.
	PrefetchBytes int64
	CacheBytes    int64         // read cache bound; default 1 GiB, < 0 disables it
	Grace         time.Duration // Reclaim leaves packs younger than this alone; default 0
	// RetireGrace is how long a retired pack (its live chunks copied
	// elsewhere by compaction) stays readable before its object is
	// deleted: longer than any read that found its old location can take
	// (a request's RequestTimeout; a read slower than that asks the
	// metadata again when the old pack is gone). Default 5 minutes.
	RetireGrace time.Duration
	// Attempts is the number of tries of one upload round (Sync starts a
	// second round for a pack whose first failed); default 4.
	Attempts int
	// RequestTimeout bounds one request; default 2 minutes.
	RequestTimeout time.Duration
	// Unpadded packs hold their chunks back to back instead of at
	// blob.Align boundaries (Alignment). It is a property of the volume,
	// fixed when it is made: every host must agree (a host that rounds
	// freed spans to 4 KiB would mark live neighbours dead).
	Unpadded bool
}

const (
	defaultPackSize   = 16 << 20
	defaultUploads    = 8
	defaultMaxPending = 4
	defaultFetches    = 16
	defaultPrefetch   = 64 << 20
	defaultCacheBytes = 1 << 30
	defaultAttempts   = 4
	defaultTimeout    = 2 * time.Minute
	defaultRetire     = 5 * time.Minute
)

func (c *Config) setDefaults() {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	c.Prefix = strings.Trim(c.Prefix, "/")
	if c.PackSize <= 0 {
		c.PackSize = defaultPackSize
	}
	if c.Uploads <= 0 {
		c.Uploads = defaultUploads
	}
	if c.MaxPending <= 0 {
		c.MaxPending = defaultMaxPending
	}
	if c.Fetches <= 0 {
		c.Fetches = defaultFetches
	}
	if c.PrefetchBytes <= 0 {
		c.PrefetchBytes = defaultPrefetch
	}
	if c.CacheBytes == 0 {
		c.CacheBytes = defaultCacheBytes
	}
	if c.Attempts <= 0 {
		c.Attempts = defaultAttempts
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = defaultTimeout
	}
	if c.RetireGrace <= 0 {
		c.RetireGrace = defaultRetire
	}
}

// ParseURL reads s3://BUCKET/PREFIX?endpoint=URL&region=REGION into the
// location fields of a Config. Credentials are never part of the URL.
func ParseURL(s string) (Config, error) {
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL it quotes
		}
		return Config{}, fmt.Errorf("s3 url %s: %w", shownURL(s), err)
	}
	if u.Scheme != "s3" || u.Host == "" {
		return Config{}, fmt.Errorf("s3 url %s: want s3://BUCKET/PREFIX?endpoint=...", shownURL(s))
	}
	if u.User != nil {
		return Config{}, errors.New("s3 url: credentials do not belong in the URL: use AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a credentials file")
	}
	c := Config{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/")}
	q := u.Query()
	for k := range q {
		switch k {
		case "endpoint":
			c.Endpoint = q.Get(k)
		case "region":
			c.Region = q.Get(k)
		default:
			return Config{}, fmt.Errorf("s3 url: unknown parameter %q", k)
		}
	}
	if c.Endpoint != "" {
		e, err := url.Parse(c.Endpoint)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return Config{}, fmt.Errorf("s3 url: endpoint %s: want http(s)://HOST[:PORT]", shownURL(c.Endpoint))
		}
	}
	return c, nil
}

// shownURL is s quoted for a message, unless it holds an @: a user part,
// where someone may have put credentials, is never shown, even in a URL
// that does not parse.
func shownURL(s string) string {
	if strings.Contains(s, "@") {
		return "(not shown: it holds an @, where credentials would be)"
	}
	return strconv.Quote(s)
}
