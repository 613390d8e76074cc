package nbd

import (
	"bufio"
	"strings"
	"testing"
)

func TestShallowQueueWaitsForARunOfSingleRequests(t *testing.T) {
	var q shallowQueue
	for i := 1; i < shallowAfter; i++ {
		q.note(1)
		if q.held() {
			t.Fatalf("held after %d single requests, want %d", i, shallowAfter)
		}
	}
	q.note(1)
	if !q.held() {
		t.Fatalf("not held after %d single requests", shallowAfter)
	}
	q.note(2) // the client queued a second request: a deeper queue
	if q.held() {
		t.Fatal("still held after a request found another in flight")
	}
	for i := 0; i < shallowAfter; i++ {
		q.note(1)
	}
	if !q.held() {
		t.Fatal("not held again after another run of single requests")
	}
}

func TestRunsInlineOnlyShortLoneReads(t *testing.T) {
	idle := &session{r: bufio.NewReader(strings.NewReader(""))}
	busy := &session{r: bufio.NewReader(strings.NewReader("next request"))}
	busy.r.Peek(1) // fill the buffer: another request has arrived
	read := func(n uint32) *request {
		return &request{requestHeader: requestHeader{Type: cmdRead, Length: n}}
	}
	for _, tc := range []struct {
		name     string
		s        *session
		req      *request
		inFlight int
		want     bool
	}{
		{"short read alone", idle, read(4096), 1, true},
		{"largest inline read", idle, read(inlineReadMax), 1, true},
		{"long read", idle, read(inlineReadMax + 1), 1, false},
		{"another in flight", idle, read(4096), 2, false},
		{"another buffered", busy, read(4096), 1, false},
		{"write", idle, &request{requestHeader: requestHeader{Type: cmdWrite, Length: 4096}}, 1, false},
		{"flush", idle, &request{requestHeader: requestHeader{Type: cmdFlush}}, 1, false},
	} {
		if got := tc.s.runsInline(tc.req, tc.inFlight); got != tc.want {
			t.Errorf("%s: runsInline = %v, want %v", tc.name, got, tc.want)
		}
	}
}
