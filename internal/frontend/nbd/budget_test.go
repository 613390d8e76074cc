package nbd

import (
	"testing"
	"time"
)

func TestByteBudgetBlocksAndClamps(t *testing.T) {
	b := newByteBudget(100)
	if got := b.acquire(1000); got != 100 {
		t.Fatalf("oversized acquire granted %d, want the whole budget", got)
	}
	acquired := make(chan int64)
	go func() { acquired <- b.acquire(10) }()
	select {
	case <-acquired:
		t.Fatal("acquire succeeded past the budget")
	case <-time.After(20 * time.Millisecond):
	}
	b.release(100)
	if got := <-acquired; got != 10 {
		t.Fatalf("granted %d", got)
	}
}
