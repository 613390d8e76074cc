package testutil

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// Data goes through a DelayProxy whole and in order both ways, and a
// round trip through it takes at least twice the one-way delay.
func TestDelayProxy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Check(t, err)
	defer ln.Close()
	go func() { // an echo server
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	const oneWay = 20 * time.Millisecond
	c, err := net.Dial("tcp", DelayProxy(t, ln.Addr().String(), oneWay))
	Check(t, err)
	defer c.Close()
	for _, size := range []int{1, 1000, 300 << 10} {
		want := SeededBytes(uint64(size), size)
		start := time.Now()
		go c.Write(want)
		got := make([]byte, size)
		_, err := io.ReadFull(c, got)
		Check(t, err)
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes came back changed", size)
		}
		if d := time.Since(start); d < 2*oneWay {
			t.Errorf("a round trip of %d bytes took %v, less than twice the delay of %v", size, d, oneWay)
		}
	}
}
