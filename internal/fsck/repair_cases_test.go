package fsck_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/doppelfs/doppel/internal/fsck"
	"github.com/doppelfs/doppel/internal/schema"
	"github.com/doppelfs/doppel/internal/testutil"
	"github.com/doppelfs/doppel/internal/vfs"
)

// appendGarbage writes n random bytes at the next aligned offset of the
// last segment and returns where.
func (e *env) appendGarbage(n int) (uint32, uint64, []byte) {
	e.segmentFiles()
	nums := testutil.Must(e.v.Blobs.Segments())
	num := nums[len(nums)-1]
	f := testutil.Must(os.OpenFile(filepath.Join(e.dir, "chunks", fmt.Sprintf("seg-%08x", num)), os.O_RDWR, 0))
	defer f.Close()
	off := (testutil.Must(f.Stat()).Size() + 4095) &^ 4095
	data := testutil.SeededBytes(77, n)
	testutil.Must(f.WriteAt(data, off))
	return num, uint64(off), data
}

func (e *env) setInode(p string, change func(*schema.Inode)) {
	n := e.inode(p)
	change(&n)
	e.commit(schema.InodeKey(e.ino[p]), n.Encode())
}

func (e *env) flipByte(p string) {
	seg, off := e.segment(p)
	f := testutil.Must(os.OpenFile(seg, os.O_RDWR, 0))
	defer f.Close()
	b := make([]byte, 1)
	testutil.Must(f.ReadAt(b, off+100))
	b[0] ^= 0x20
	testutil.Must(f.WriteAt(b, off+100))
}

// metadataRepairs damage records; no file data is lost.
func metadataRepairs() []repairCase {
	return []repairCase{
		{name: "refcount too high", kind: fsck.KindRefcount, damage: func(e *env) {
			h, c := e.chunkOf("/solo")
			c.Refs += 2
			e.commit(schema.ChunkKey(h), c.Encode())
		}},
		{name: "refcount too low", kind: fsck.KindRefcount, damage: func(e *env) {
			h, c := e.chunkOf("/a")
			c.Refs--
			e.commit(schema.ChunkKey(h), c.Encode())
		}},
		{name: "chunk nobody uses", kind: fsck.KindRefcount, damage: func(e *env) {
			seg, off, data := e.appendGarbage(8000)
			c := schema.Chunk{Segment: seg, Offset: off, Stored: 8000, Raw: 8000, Refs: 1}
			e.commit(schema.ChunkKey(schema.Sum(data)), c.Encode())
		}},
		{name: "orphan space", kind: fsck.KindOrphanSpace, damage: func(e *env) { e.appendGarbage(10000) }},
		{name: "pending free", kind: fsck.KindPendingFree, damage: func(e *env) {
			seg, off, _ := e.appendGarbage(5000)
			e.commit(schema.FreeKey(seg, off), schema.FreeValue(5000))
		}},
		{name: "free record over a live chunk", kind: fsck.KindFreeOverlap, damage: func(e *env) {
			_, c := e.chunkOf("/solo")
			e.commit(schema.FreeKey(c.Segment, c.Offset), schema.FreeValue(c.Stored))
		}},
		{name: "stats", kind: fsck.KindStats, damage: func(e *env) {
			s := e.v.Engine.Stats()
			s.LogicalBytes += 5
			s.Chunks--
			e.commit(schema.KeyStats, s.Encode())
		}},
		{name: "stats record undecodable", kind: fsck.KindStats, damage: func(e *env) {
			e.commit(schema.KeyStats, []byte{1, 2})
		}},
		{name: "version record undecodable", kind: fsck.KindDecode, damage: func(e *env) {
			e.commit(schema.KeyVersion, []byte{1})
		}},
		{name: "next_ino too low", kind: fsck.KindInoBeyondNext, damage: func(e *env) {
			e.commit(schema.KeyNextIno, schema.U64(3))
		}},
		{name: "back-ref deleted", kind: fsck.KindMissingParentRef, path: "/d/e/link", damage: func(e *env) {
			e.commit(schema.ParentKey(e.ino["/a"], e.ino["/d/e"], "link"), nil)
		}},
		{name: "back-ref without entry", kind: fsck.KindDanglingParentRef, path: "/a", damage: func(e *env) {
			e.commit(schema.ParentKey(e.ino["/a"], e.ino["/d"], "ghost"), []byte{})
		}},
		{name: "dirent deleted", kind: fsck.KindUnreachable, damage: func(e *env) {
			e.commit(schema.DirentKey(e.ino["/d"], "copy"), nil)
		}},
		{name: "directory unreachable", kind: fsck.KindUnreachable, damage: func(e *env) {
			e.commit(schema.DirentKey(vfs.RootIno, "d"), nil)
		}},
		{name: "unreachable cycle", kind: fsck.KindUnreachable, damage: func(e *env) {
			up := schema.Dirent{Ino: e.ino["/d"], Type: syscall.S_IFDIR}
			e.commit(schema.DirentKey(vfs.RootIno, "d"), nil, schema.ParentKey(e.ino["/d"], vfs.RootIno, "d"), nil,
				schema.DirentKey(e.ino["/d/e"], "up"), up.Encode(), schema.ParentKey(e.ino["/d"], e.ino["/d/e"], "up"), []byte{})
		}},
		{name: "entry in a file", kind: fsck.KindDirentNotInDir, path: "/solo/x", damage: func(e *env) {
			x := schema.Dirent{Ino: e.ino["/d/b"], Type: syscall.S_IFREG}
			e.commit(schema.DirentKey(e.ino["/solo"], "x"), x.Encode(), schema.ParentKey(e.ino["/d/b"], e.ino["/solo"], "x"), []byte{})
		}},
		{name: "file nlink", kind: fsck.KindNlink, path: "/a", damage: func(e *env) {
			e.setInode("/a", func(n *schema.Inode) { n.Nlink = 7 })
		}},
		{name: "dir nlink", kind: fsck.KindNlink, path: "/d", damage: func(e *env) {
			e.setInode("/d", func(n *schema.Inode) { n.Nlink = 2 })
		}},
		{name: "inode deleted", kind: fsck.KindDanglingDirent, path: "/solo", gone: []string{"/solo"}, damage: func(e *env) {
			e.commit(schema.InodeKey(e.ino["/solo"]), nil)
		}},
		{name: "xattr of a missing inode", kind: fsck.KindDanglingXattr, damage: func(e *env) {
			e.commit(schema.XattrKey(9999, "user.x"), []byte("v"))
		}},
		{name: "orphan marker of a missing inode", kind: fsck.KindBadOrphan, damage: func(e *env) {
			e.commit(schema.OrphanKey(9999), []byte{})
		}},
		{name: "orphan marker of a linked inode", kind: fsck.KindBadOrphan, path: "/solo", damage: func(e *env) {
			e.commit(schema.OrphanKey(e.ino["/solo"]), []byte{})
		}},
		{name: "size below extents", kind: fsck.KindExtentPastEOF, path: "/solo", damage: func(e *env) {
			e.setInode("/solo", func(n *schema.Inode) { n.Size = 10 })
		}},
		{name: "mapped", kind: fsck.KindMapped, path: "/d/b", damage: func(e *env) {
			e.setInode("/d/b", func(n *schema.Inode) { n.Mapped++ })
		}},
		{name: "dirent type", kind: fsck.KindDirentType, path: "/sym", damage: func(e *env) {
			sym := testutil.Must(e.v.NS.Lookup(vfs.RootIno, "sym")).Ino
			d := schema.Dirent{Ino: sym, Type: syscall.S_IFREG}
			e.commit(schema.DirentKey(vfs.RootIno, "sym"), d.Encode())
		}},
		{name: "undecodable inode stays", kind: fsck.KindNlink, remains: fsck.KindDecode, damage: func(e *env) {
			fifo := testutil.Must(e.v.NS.Lookup(e.ino["/d"], "fifo")).Ino
			e.commit(schema.InodeKey(fifo), []byte{9, 9})
			e.setInode("/a", func(n *schema.Inode) { n.Nlink = 7 })
		}},
		{name: "unknown key stays", kind: fsck.KindNlink, remains: fsck.KindUnknownKey, damage: func(e *env) {
			e.commit([]byte("zzz"), []byte("?"))
			e.setInode("/a", func(n *schema.Inode) { n.Nlink = 7 })
		}},
	}
}

// dataRepairs lose data: the ranges become holes.
func dataRepairs() []repairCase {
	return []repairCase{
		{name: "chunk record deleted", kind: fsck.KindMissingChunk, path: "/solo", lost: []string{"/solo"}, damage: func(e *env) {
			h, _ := e.chunkOf("/solo")
			e.commit(schema.ChunkKey(h), nil)
		}},
		{name: "chunk record undecodable", kind: fsck.KindDecode, path: "/solo", lost: []string{"/solo"}, damage: func(e *env) {
			h, _ := e.chunkOf("/solo")
			e.commit(schema.ChunkKey(h), []byte{7})
		}},
		{name: "flipped byte", verify: true, kind: fsck.KindBadHash, path: "/solo", lost: []string{"/solo"}, damage: func(e *env) {
			e.flipByte("/solo")
		}},
		{name: "flipped byte in a shared chunk", verify: true, kind: fsck.KindBadHash, lost: []string{"/a", "/d/b", "/d/copy"}, damage: func(e *env) {
			e.flipByte("/a")
		}},
		{name: "truncated segment", kind: fsck.KindShortChunk, path: "/solo", lost: []string{"/solo"}, anyLost: true, damage: func(e *env) {
			seg, off := e.segment("/solo")
			testutil.Check(e.t, os.Truncate(seg, off+100))
		}},
		{name: "missing segment", kind: fsck.KindMissingSegment, path: "/a", lost: []string{"/a", "/d/b", "/d/copy"}, anyLost: true, damage: func(e *env) {
			seg, _ := e.segment("/a")
			testutil.Check(e.t, os.Remove(seg))
		}},
		{name: "extent past chunk", kind: fsck.KindExtentPastChunk, path: "/solo", lost: []string{"/solo"}, damage: func(e *env) {
			x := e.extents("/solo")[0]
			x.ChunkOff = 1
			e.commit(schema.ExtentKey(e.ino["/solo"], x.Off), x.Extent.Encode())
		}},
		{name: "extent undecodable", kind: fsck.KindDecode, path: "/solo", lost: []string{"/solo"}, damage: func(e *env) {
			x := e.extents("/solo")[0]
			e.commit(schema.ExtentKey(e.ino["/solo"], x.Off), []byte{3})
		}},
	}
}
