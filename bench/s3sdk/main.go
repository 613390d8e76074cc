// Command s3sdk compares aws-sdk-go-v2 and minio-go/v7 against one S3
// endpoint: PUTs of 4 MiB objects (a pack each) and ranged GETs of 64 KiB
// (a chunk each) and of whole objects. It is run by run.sh against a
// versitygw it starts on loopback; see docs/SHARED.md, section 8, for the figures.
//
// Environment: S3SDK_ENDPOINT (http://127.0.0.1:PORT), S3SDK_BUCKET,
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/minio/minio-go/v7"
	mcreds "github.com/minio/minio-go/v7/pkg/credentials"
)

type client interface {
	put(ctx context.Context, key string, data []byte) error
	get(ctx context.Context, key string, off, n int64, buf []byte) error
}

type awsClient struct {
	c        *s3.Client
	bucket   string
	unsigned bool
}

func (a awsClient) put(ctx context.Context, key string, data []byte) error {
	var opts []func(*s3.Options)
	if a.unsigned {
		opts = append(opts, s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware))
	}
	_, err := a.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &a.bucket, Key: &key,
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))}, opts...)
	return err
}

func (a awsClient) get(ctx context.Context, key string, off, n int64, buf []byte) error {
	rng := fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	out, err := a.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &a.bucket, Key: &key, Range: &rng})
	if err != nil {
		return err
	}
	defer out.Body.Close()
	_, err = io.ReadFull(out.Body, buf[:n])
	return err
}

type minioClient struct {
	c        *minio.Client
	bucket   string
	unsigned bool
}

func (m minioClient) put(ctx context.Context, key string, data []byte) error {
	_, err := m.c.PutObject(ctx, m.bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{DisableContentSha256: m.unsigned, DisableMultipart: true})
	return err
}

func (m minioClient) get(ctx context.Context, key string, off, n int64, buf []byte) error {
	o := minio.GetObjectOptions{}
	if err := o.SetRange(off, off+n-1); err != nil {
		return err
	}
	obj, err := m.c.GetObject(ctx, m.bucket, key, o)
	if err != nil {
		return err
	}
	defer obj.Close()
	_, err = io.ReadFull(obj, buf[:n])
	return err
}

func main() {
	objects := flag.Int("objects", 32, "4 MiB objects PUT per round")
	ranges := flag.Int("ranges", 512, "64 KiB ranged GETs per round")
	rounds := flag.Int("rounds", 3, "rounds (clients alternate within each)")
	par := flag.Int("par", 4, "concurrent requests")
	only := flag.String("client", "", "run only the clients whose name starts with this")
	flag.Parse()
	ep, bucket := os.Getenv("S3SDK_ENDPOINT"), os.Getenv("S3SDK_BUCKET")
	key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")

	ac := s3.New(s3.Options{
		BaseEndpoint: aws.String(ep), Region: "us-east-1", UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider(key, secret, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
	host := ep[len("http://"):]
	mc, err := minio.New(host, &minio.Options{Creds: mcreds.NewStaticV4(key, secret, ""), Secure: false,
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		panic(err)
	}
	if err := mc.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, "make bucket:", err)
	}
	clients := []struct {
		name string
		c    client
	}{
		{"aws-sdk-go-v2 (signed payload)", awsClient{ac, bucket, false}},
		{"aws-sdk-go-v2 (UNSIGNED-PAYLOAD)", awsClient{ac, bucket, true}},
		{"minio-go/v7 (signed payload)", minioClient{mc, bucket, false}},
		{"minio-go/v7 (UNSIGNED-PAYLOAD)", minioClient{mc, bucket, true}},
	}
	clients = slices.DeleteFunc(clients, func(c struct {
		name string
		c    client
	}) bool {
		return !strings.HasPrefix(c.name, *only)
	})
	data := make([]byte, 4<<20)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	res := map[string][][3]float64{}
	for round := range *rounds {
		for ci, c := range clients {
			prefix := fmt.Sprintf("r%d/c%d/", round, ci)
			put := timeIt(*objects, *par, func(i int) error {
				return c.c.put(context.Background(), fmt.Sprintf("%s%04d", prefix, i), data)
			})
			small := timeIt(*ranges, *par, func(i int) error {
				buf := make([]byte, 64<<10)
				rr := rand.New(rand.NewPCG(uint64(i), 3))
				off := int64(rr.IntN(len(data)-len(buf))) &^ 4095
				return c.c.get(context.Background(), fmt.Sprintf("%s%04d", prefix, rr.IntN(*objects)), off, int64(len(buf)), buf)
			})
			whole := timeIt(*objects, *par, func(i int) error {
				buf := make([]byte, len(data))
				return c.c.get(context.Background(), fmt.Sprintf("%s%04d", prefix, i), 0, int64(len(buf)), buf)
			})
			res[c.name] = append(res[c.name], [3]float64{
				float64(*objects*len(data)) / put.Seconds() / (1 << 20),
				float64(*ranges) / small.Seconds(),
				float64(*objects*len(data)) / whole.Seconds() / (1 << 20),
			})
		}
	}
	fmt.Printf("| client | PUT 4 MiB, MiB/s | ranged GET 64 KiB, req/s | GET 4 MiB, MiB/s |\n|---|---|---|---|\n")
	for _, c := range clients {
		var cols [3][]float64
		for _, v := range res[c.name] {
			for k := range 3 {
				cols[k] = append(cols[k], v[k])
			}
		}
		fmt.Printf("| %s | %.0f | %.0f | %.0f |\n", c.name, median(cols[0]), median(cols[1]), median(cols[2]))
	}
	fmt.Printf("\n(median of %d rounds; %d PUTs, %d ranged GETs and %d whole GETs per round, %d at a time)\n",
		*rounds, *objects, *ranges, *objects, *par)
}

func timeIt(n, par int, f func(int) error) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	next := make(chan int)
	for range par {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					fmt.Fprintln(os.Stderr, "error:", err)
					os.Exit(1)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return time.Since(start)
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
