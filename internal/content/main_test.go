package content

import (
	"os"
	"testing"

	"github.com/doppelfs/doppel/internal/testutil/sharedtest"
)

// DOPPEL_TEST_META=postgres or postgres+s3: the engine's tests that take
// their stores from newEnv run on a PostgreSQL schema (and S3) the run
// starts and stops.
func TestMain(m *testing.M) { os.Exit(sharedtest.Main(m)) }
