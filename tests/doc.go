// Package tests holds doppel's end-to-end tests. TestMain builds
// ./cmd/doppel; the tests init volumes in temporary directories, mount them
// through FUSE (skipped when /dev/fuse or fusermount3 is unusable) and
// check them against the host file system.
//
//	go test ./tests                                   # everything
//	go test ./tests -run 'TestModel$' -model.seed=N   # replay a model run
//	DOPPEL_MODEL_TARGET=plain go test ./tests -run TestModel
//	                                                  # check the harness on a plain dir
//
// Environment:
//
//	DOPPEL_BIN           use this doppel binary instead of building one
//	DOPPEL_MODEL_OPS     model operations when -model.ops is not given (default 5000)
//	DOPPEL_MODEL_TARGET  "plain": run the model against a host directory
//	DOPPEL_MODEL_INIT    extra doppel init flags for the model's volume
//	DOPPEL_PJDFSTEST     a pjdfstest checkout: TestPjdfstest runs it in a volume
//	DOPPEL_XFSTESTS      an xfstests checkout: TestFsx, TestFsstress and
//	                     TestFsstressClones run its ltp/fsx and ltp/fsstress
//
// Files: main_test.go (harness, volumes), model*_test.go (randomized model
// test), dedup_test.go, persist_test.go, crash_test.go, posix_test.go,
// tools_test.go (tar, git, sqlite3), cli_test.go, clone*_test.go (clone,
// snapshot, clones, rmclone, diff, scan through the mount, and kill -9
// during clones, materialization and freeing), corrupt_test.go (damage to
// segment files, pack objects and records, with storefiles_test.go and
// storepacks_test.go to reach under an unmounted volume), nbd*_test.go
// (the block export), multihost*_test.go (several hosts on one volume),
// pjdfstest_test.go and xfstests_ltp_test.go (pjdfstest, fsx, fsstress:
// opt-in).
package tests
