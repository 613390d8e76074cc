package fsck_test

import (
	"os"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil/voltest"
)

// TestMain runs the tests on the volume kind DOPPEL_TEST_META picks
// (voltest): embedded by default, shared on PostgreSQL with "postgres".
func TestMain(m *testing.M) { os.Exit(voltest.Main(m)) }
