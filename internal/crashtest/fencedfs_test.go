package crashtest

import (
	"io"
	"os"
	"sync"

	"github.com/cockroachdb/pebble/vfs"
)

// fencedFS is one boot's view of the in-memory file system the metadata
// lives on. At the power cut the fence closes: operations under way are
// waited for, and every later one blocks for good. A metadata store that
// failed at the cut is left open (meta.Pebble.Close), and its background
// work would otherwise go on writing and syncing after the file system was
// reset to its synced state, making durable what the cut should have
// lost, or racing the next boot's store.
type fencedFS struct {
	vfs.FS
	fence *fence
}

// fence is the gate of one boot's operations.
type fence struct {
	mu     sync.RWMutex
	closed bool
}

// enter returns the exit of an operation, or blocks for good once the
// fence is closed.
func (f *fence) enter() func() {
	f.mu.RLock()
	if f.closed {
		f.mu.RUnlock()
		select {}
	}
	return f.mu.RUnlock
}

// close waits for the operations under way and stops all later ones.
func (f *fence) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
}

func (fs fencedFS) file(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return fencedFile{f, fs.fence}, nil
}

func (fs fencedFS) Create(name string) (vfs.File, error) {
	defer fs.fence.enter()()
	return fs.file(fs.FS.Create(name))
}

func (fs fencedFS) Link(oldname, newname string) error {
	defer fs.fence.enter()()
	return fs.FS.Link(oldname, newname)
}

func (fs fencedFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	defer fs.fence.enter()()
	return fs.file(fs.FS.Open(name, opts...))
}

func (fs fencedFS) OpenReadWrite(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	defer fs.fence.enter()()
	return fs.file(fs.FS.OpenReadWrite(name, opts...))
}

func (fs fencedFS) OpenDir(name string) (vfs.File, error) {
	defer fs.fence.enter()()
	return fs.file(fs.FS.OpenDir(name))
}

func (fs fencedFS) Remove(name string) error {
	defer fs.fence.enter()()
	return fs.FS.Remove(name)
}

func (fs fencedFS) RemoveAll(name string) error {
	defer fs.fence.enter()()
	return fs.FS.RemoveAll(name)
}

func (fs fencedFS) Rename(oldname, newname string) error {
	defer fs.fence.enter()()
	return fs.FS.Rename(oldname, newname)
}

func (fs fencedFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	defer fs.fence.enter()()
	return fs.file(fs.FS.ReuseForWrite(oldname, newname))
}

func (fs fencedFS) MkdirAll(dir string, perm os.FileMode) error {
	defer fs.fence.enter()()
	return fs.FS.MkdirAll(dir, perm)
}

func (fs fencedFS) Lock(name string) (io.Closer, error) {
	defer fs.fence.enter()()
	return fs.FS.Lock(name)
}

func (fs fencedFS) List(dir string) ([]string, error) {
	defer fs.fence.enter()()
	return fs.FS.List(dir)
}

func (fs fencedFS) Stat(name string) (os.FileInfo, error) {
	defer fs.fence.enter()()
	return fs.FS.Stat(name)
}

// fencedFile is a file of a fencedFS.
type fencedFile struct {
	vfs.File
	fence *fence
}

func (f fencedFile) Close() error {
	defer f.fence.enter()()
	return f.File.Close()
}

func (f fencedFile) Read(p []byte) (int, error) {
	defer f.fence.enter()()
	return f.File.Read(p)
}

func (f fencedFile) ReadAt(p []byte, off int64) (int, error) {
	defer f.fence.enter()()
	return f.File.ReadAt(p, off)
}

func (f fencedFile) Write(p []byte) (int, error) {
	defer f.fence.enter()()
	return f.File.Write(p)
}

func (f fencedFile) WriteAt(p []byte, off int64) (int, error) {
	defer f.fence.enter()()
	return f.File.WriteAt(p, off)
}

func (f fencedFile) Preallocate(off, n int64) error {
	defer f.fence.enter()()
	return f.File.Preallocate(off, n)
}

func (f fencedFile) Sync() error {
	defer f.fence.enter()()
	return f.File.Sync()
}

func (f fencedFile) SyncData() error {
	defer f.fence.enter()()
	return f.File.SyncData()
}

func (f fencedFile) SyncTo(n int64) (bool, error) {
	defer f.fence.enter()()
	return f.File.SyncTo(n)
}
