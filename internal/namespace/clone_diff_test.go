package namespace_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/doppelfs/doppel/internal/namespace"
	"github.com/doppelfs/doppel/internal/ops"
)

// checkDiff diffs two random trees both ways the volume can: from the
// journal (when related) and by walking; both must agree with each other
// and with the model, leaving out differences of modification time only
// (the model does not keep times).
func (m *cloneModel) checkDiff() {
	a := m.trees[m.diffRng.IntN(len(m.trees))]
	b := m.trees[m.diffRng.IntN(len(m.trees))]
	ctx := context.Background()
	// Prune as far as anything allows before every diff: what a diff
	// needs must survive it.
	m.v.NS.SetJournalKeep(1)
	if _, err := m.v.NS.PruneJournal(); err != nil {
		m.fail("prune the journal: %v", err)
	}
	// And compact what only diffs read, before every other diff (the
	// pruner's own passes wait for thousands of entries).
	if m.diffRng.IntN(2) == 0 {
		c, err := m.v.NS.CompactJournal()
		if err != nil {
			m.fail("compact the journal: %v", err)
		}
		m.compacted += c.Deleted
	}
	fast, err := m.v.NS.Diff(ctx, "/"+a.name, "/"+b.name, namespace.DiffOptions{})
	if err != nil {
		m.fail("diff %s %s: %v", a.name, b.name, err)
	}
	full, err := m.v.NS.Diff(ctx, "/"+a.name, "/"+b.name, namespace.DiffOptions{Full: true})
	if err != nil {
		m.fail("diff --full %s %s: %v", a.name, b.name, err)
	}
	if fast.Method == "journal" {
		m.diffs++
	}
	if got, want := diffLines(fast.Entries, true), diffLines(full.Entries, true); !slices.Equal(got, want) {
		m.fail("diff %s %s (%s since %d) differs from the full walk:\n got %q\nwant %q", a.name, b.name, fast.Method, fast.Since, got, want)
	}
	want := map[string]string{}
	ignore := map[string]bool{} // diff leaves out what a clone excluded
	for _, s := range []string{a.skip, b.skip} {
		if s != "" {
			ignore[s] = true
		}
	}
	modelDiff("", a.root, b.root, want, ignore)
	var wantLines []string
	for p, s := range want {
		wantLines = append(wantLines, s+"\t"+p)
	}
	slices.Sort(wantLines)
	if got := diffLines(full.Entries, false); !slices.Equal(got, wantLines) {
		m.fail("diff %s %s:\n got %q\nwant %q", a.name, b.name, got, wantLines)
	}
}

// diffLines renders entries as "STATUS\tPATH"; without times, entries
// that differ only in modification time are left out.
func diffLines(es []ops.DiffEntry, withTimes bool) []string {
	var out []string
	for _, e := range es {
		what := slices.DeleteFunc(slices.Clone(e.What), func(w string) bool { return !withTimes && w == "times" })
		if e.Status == "M" && len(what) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s\t%s\t%v", e.Status, e.Path, what))
	}
	slices.Sort(out)
	if !withTimes {
		for i, l := range out { // the model knows statuses, not details
			out[i] = l[:bytes.LastIndexByte([]byte(l), '\t')]
		}
	}
	return out
}

func kind(n *mnode) string {
	switch {
	case n.dir:
		return "d"
	case n.link != "":
		return "l"
	}
	return "f"
}

func modelDiff(rel string, a, b *mnode, out map[string]string, ignore map[string]bool) {
	p := rel
	if p == "" {
		p = "."
	}
	switch {
	case a == nil && b == nil:
		return
	case a == nil:
		out[p] = "A"
		modelBelow(rel, b, "A", out, ignore)
		return
	case b == nil:
		out[p] = "D"
		modelBelow(rel, a, "D", out, ignore)
		return
	case kind(a) != kind(b):
		out[p] = "T"
		if a.dir {
			modelBelow(rel, a, "D", out, ignore)
		}
		if b.dir {
			modelBelow(rel, b, "A", out, ignore)
		}
		return
	}
	if a.mode != b.mode || a.link != b.link || !bytes.Equal(a.data, b.data) || !maps.Equal(a.xattrs, b.xattrs) {
		out[p] = "M"
	}
	if !a.dir {
		return
	}
	names := slices.Collect(maps.Keys(a.children))
	names = append(names, slices.Collect(maps.Keys(b.children))...)
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		if !ignore[name] {
			modelDiff(joinModel(rel, name), a.children[name], b.children[name], out, ignore)
		}
	}
}

func modelBelow(rel string, n *mnode, status string, out map[string]string, ignore map[string]bool) {
	for name, c := range n.children {
		if ignore[name] {
			continue
		}
		p := joinModel(rel, name)
		out[p] = status
		modelBelow(p, c, status, out, ignore)
	}
}

func joinModel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
