package tests

import (
	"fmt"
	"os"
	"testing"
)

// TestModelParallel runs several independent models at once, each in its
// own subdirectory of one volume, to exercise the daemon's concurrency
// with the same checks. Each worker's seed is printed; a worker's op
// sequence replays alone with TestModel and that seed, though a race may
// need the company to show again. Workers share the -model.ops budget.
// It runs beside TestModel (both parallel).
func TestModelParallel(t *testing.T) {
	t.Parallel()
	const workers = 4
	seed, ops := modelConfig(t)
	target := os.Getenv("DOPPEL_MODEL_TARGET")
	setModelUmask(t)

	var v *volume
	var sutBase string
	if target == "plain" {
		sutBase = realTempDir(t)
	} else {
		v = newVolume(t)
		sutBase = v.Mnt
	}
	models := make([]*model, workers)
	refRoots := make([]string, workers) // in the parent: compared again after the remount
	for i := range refRoots {
		refRoots[i] = realTempDir(t)
	}
	t.Run("workers", func(t *testing.T) {
		for i := range models {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				wseed := seed + int64(i)
				t.Logf("worker %d: seed=%d ops=%d (replay alone: -run 'TestModel$' -model.seed=%d)", i, wseed, ops/workers, wseed)
				sutRoot := fmt.Sprintf("%s/w%d", sutBase, i)
				if err := os.Mkdir(sutRoot, 0o755); err != nil {
					t.Fatal(err)
				}
				refRoot := refRoots[i]
				for _, r := range []string{refRoot, sutRoot} {
					if err := os.Chmod(r, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				m := newModel(t, wseed, target, refRoot, sutRoot)
				models[i] = m
				t.Cleanup(m.closeHandles)
				stop := m.watchdog()
				defer stop()
				m.run(ops / workers)
				m.closeHandles()
				m.compareTrees("at the end")
			})
		}
	})
	if v == nil || t.Failed() {
		return
	}
	v.remount(t)
	for i, m := range models {
		t.Run(fmt.Sprintf("after-remount/%d", i), func(t *testing.T) {
			m.t = t
			m.compareTrees("after remount at the end")
		})
	}
}
