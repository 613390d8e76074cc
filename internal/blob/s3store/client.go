package s3store

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/doppelfs/doppel/internal/blob"
)

// objects is the S3 API as the store uses it: whole-object PUTs, ranged
// GETs, deletes and listings of the pack keys.
type objects struct {
	c       *s3.Client
	bucket  string
	prefix  string // "" or "PREFIX/"
	timeout time.Duration
}

func newObjects(cfg Config) *objects {
	creds := cfg.Credentials
	opts := s3.Options{
		Region:       cfg.Region,
		UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey,
				SessionToken: creds.SessionToken, Source: "doppel"}, nil
		}),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		// Ranged reads of the FUSE requests run beside the uploads and
		// prefetch GETs; 8 more covers them and the odd HEAD or LIST.
		HTTPClient: newWholeBodyClient(cfg.Uploads + cfg.Fetches + 8),
	}
	if cfg.Endpoint != "" {
		opts.BaseEndpoint = aws.String(cfg.Endpoint)
	}
	return &objects{c: s3.New(opts), bucket: cfg.Bucket, prefix: keyPrefix(cfg.Prefix), timeout: cfg.RequestTimeout}
}

// keyPrefix is what a volume's object keys start with for Config.Prefix.
func keyPrefix(prefix string) string {
	if prefix == "" {
		return ""
	}
	return prefix + "/"
}

// PackKey is the object key of pack num of a volume whose objects are
// under prefix (Config.Prefix), for tests and tools that reach into the
// bucket.
func PackKey(prefix string, num uint32) string { return (&objects{prefix: keyPrefix(prefix)}).key(num) }

const packDir = "packs/"

// key is the object key of pack num.
func (o *objects) key(num uint32) string {
	return fmt.Sprintf("%s%s%08x", o.prefix, packDir, num)
}

// packNum is the number of the pack whose key is k, or 0.
func (o *objects) packNum(k string) uint32 {
	hex, ok := strings.CutPrefix(k, o.prefix+packDir)
	if !ok || len(hex) != 8 {
		return 0
	}
	n, err := strconv.ParseUint(hex, 16, 32)
	if err != nil || strconv.FormatUint(n, 16) != strings.TrimLeft(hex, "0") {
		return 0
	}
	return uint32(n)
}

func (o *objects) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), o.timeout)
}

// put uploads pack num. The payload is not signed (UNSIGNED-PAYLOAD):
// signing it costs a SHA-256 of every byte on both sides, which on a
// machine shared with the server was a fifth of the client's CPU and more
// of the server's; a CRC32C header (x-amz-checksum-crc32c, computed by
// the CPU's instruction at several GB/s) still lets the server refuse a
// body damaged in transit (TestPutChecksumRefused), and the request
// itself stays signed. docs/SHARED.md, "Client library". crc is the
// CRC32C of data, which goes to the socket with one write
// (wholeBodyClient).
func (o *objects) put(num uint32, data []byte, crc uint32) error {
	ctx, cancel := o.ctx()
	defer cancel()
	ctx = withWholeBody(ctx, data)
	body := bytes.NewReader(data)
	_, err := o.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &o.bucket, Key: aws.String(o.key(num)),
		Body: body, ContentLength: aws.Int64(int64(len(data))),
		ChecksumCRC32C: aws.String(crc32cBase64(crc))},
		s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware))
	return o.wrap("put", num, err)
}

// get reads len(buf) bytes of pack num from off.
func (o *objects) get(num uint32, off int64, buf []byte) error {
	return o.getFilling(num, off, buf, nil)
}

// getStep is how many bytes of a ranged GET arrive between two calls of
// getFilling's filled.
const getStep = 512 << 10

// getFilling is get that, if filled is not nil, calls it with how many
// bytes of buf hold the range's bytes, every getStep bytes as they
// arrive: reads of a long prefetch's first chunks need not wait for its
// end.
func (o *objects) getFilling(num uint32, off int64, buf []byte, filled func(n int)) error {
	ctx, cancel := o.ctx()
	defer cancel()
	rng := fmt.Sprintf("bytes=%d-%d", off, off+int64(len(buf))-1)
	out, err := o.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &o.bucket, Key: aws.String(o.key(num)), Range: &rng})
	if err != nil {
		return o.wrap("get", num, err)
	}
	defer out.Body.Close()
	step := len(buf)
	if filled != nil {
		step = getStep
	}
	for n := 0; n < len(buf); {
		m, err := io.ReadFull(out.Body, buf[n:min(len(buf), n+step)])
		n += m
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("s3: pack %d: %d of %d bytes at %d: %w", num, n, len(buf), off, blob.ErrCorrupt)
		}
		if err != nil {
			return o.wrap("get", num, err)
		}
		if filled != nil {
			filled(n)
		}
	}
	return nil
}

// head returns pack num's size and modification time.
func (o *objects) head(num uint32) (object, error) {
	ctx, cancel := o.ctx()
	defer cancel()
	out, err := o.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &o.bucket, Key: aws.String(o.key(num))})
	if err != nil {
		return object{}, o.wrap("head", num, err)
	}
	return object{aws.ToInt64(out.ContentLength), aws.ToTime(out.LastModified)}, nil
}

func (o *objects) delete(num uint32) error {
	ctx, cancel := o.ctx()
	defer cancel()
	_, err := o.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &o.bucket, Key: aws.String(o.key(num))})
	return o.wrap("delete", num, err)
}

// object is a listed pack.
type object struct {
	size    int64
	modTime time.Time
}

// list lists every pack. An error anywhere fails the whole listing.
func (o *objects) list() (map[uint32]object, error) {
	out := map[uint32]object{}
	p := s3.NewListObjectsV2Paginator(o.c, &s3.ListObjectsV2Input{Bucket: &o.bucket, Prefix: aws.String(o.prefix + packDir)})
	for p.HasMorePages() {
		ctx, cancel := o.ctx()
		page, err := p.NextPage(ctx)
		cancel()
		if err != nil {
			return nil, o.wrap("list", 0, err)
		}
		for _, obj := range page.Contents {
			if num := o.packNum(aws.ToString(obj.Key)); num != 0 {
				out[num] = object{aws.ToInt64(obj.Size), aws.ToTime(obj.LastModified)}
			}
		}
	}
	return out, nil
}

// wrap names the operation and pack, and maps missing objects to
// os.ErrNotExist and refused ranges to blob.ErrCorrupt.
func (o *objects) wrap(op string, num uint32, err error) error {
	if err == nil {
		return nil
	}
	what := fmt.Sprintf("s3: %s pack %d", op, num)
	if num == 0 {
		what = fmt.Sprintf("s3: %s s3://%s/%s%s", op, o.bucket, o.prefix, packDir)
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return fmt.Errorf("%s: %w", what, os.ErrNotExist)
		case "InvalidRange":
			return fmt.Errorf("%s: range beyond the object: %w", what, blob.ErrCorrupt)
		case "NoSuchBucket":
			return fmt.Errorf("%s: bucket %q does not exist", what, o.bucket)
		}
	}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == 416 {
		return fmt.Errorf("%s: range beyond the object: %w", what, blob.ErrCorrupt)
	}
	return fmt.Errorf("%s: %w", what, err)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32cBase64 is the x-amz-checksum-crc32c value of a CRC32C.
func crc32cBase64(crc uint32) string {
	return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc))
}
