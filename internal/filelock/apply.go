package filelock

import "sort"

// Apply returns what an owner that holds own (sorted, not overlapping)
// holds after req: the range of req is taken out of every lock it
// overlaps (which may split one in two), then, unless req unlocks, req
// goes in, joined with its neighbours of the same type, as POSIX has it
// (a lock converts the owner's overlapping locks, never conflicts with
// them). The result is sorted and not overlapping; own is not changed.
func Apply(own []Lock, req Lock) []Lock {
	out := make([]Lock, 0, len(own)+2)
	for _, l := range own {
		if !Overlaps(l, req) {
			out = append(out, l)
			continue
		}
		if l.Start < req.Start {
			left := l
			left.End = req.Start - 1
			out = append(out, left)
		}
		if l.End > req.End {
			right := l
			right.Start = req.End + 1
			out = append(out, right)
		}
	}
	if req.Type != Unlock {
		out = append(out, req)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return merge(out)
}

// merge joins neighbours of the same type that touch (sorted, not
// overlapping input).
func merge(ls []Lock) []Lock {
	out := ls[:0]
	for _, l := range ls {
		if n := len(out); n > 0 && out[n-1].Type == l.Type && out[n-1].End != MaxEnd && out[n-1].End+1 == l.Start {
			out[n-1].End = l.End
			out[n-1].Pid = l.Pid
			continue
		}
		out = append(out, l)
	}
	return out
}
