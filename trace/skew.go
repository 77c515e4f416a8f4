package trace

import (
	"fmt"
	"slices"
	"time"
)

// ClientsKey, as a key of Skew's shifts, stands for every client node
// (ClassifyRoles with the default options), as the generator's CLIENT does.
const ClientsKey = "CLIENT"

// Skew shifts the clocks of nodes of t, as Project 5's skewer does (section
// 7.5.6): every timestamp taken on node N's clock moves by shifts[N]
// nanoseconds. A message's SendTS moves by its sender's shift and its RecvTS
// by its receiver's; in a SingleClock trace, whose one timestamp per message
// is on the sender's clock, both move by the sender's. Known offsets in
// Meta.Offsets move with their node's clock, so that they still map it onto
// the reference clock (a shifted reference node gets an offset of its own
// against its former clock), and a warning records the change. It returns how many
// messages changed, or an error naming a node that is not in the trace.
func Skew(t *Trace, shifts map[string]int64) (int, error) {
	by := make([]int64, t.Syms.Len())
	nodes := make([]bool, t.Syms.Len())
	for i := range t.Messages {
		nodes[t.Messages[i].SrcNode] = true
		nodes[t.Messages[i].DstNode] = true
	}
	var roles *Roles
	names := make([]string, 0, len(shifts))
	for name := range shifts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		d := shifts[name]
		if name == ClientsKey {
			if roles == nil {
				roles = ClassifyRoles(t, DefaultRoleOptions())
			}
			found := false
			for s := 1; s < len(nodes); s++ {
				if nodes[s] && roles.Client(Sym(s)) {
					by[s] += d
					found = true
				}
			}
			if !found {
				return 0, fmt.Errorf("skew: the trace has no client nodes (%s)", ClientsKey)
			}
			continue
		}
		s, ok := t.Syms.Lookup(name)
		if !ok || s == 0 || !nodes[s] {
			return 0, fmt.Errorf("skew: node %q is not in the trace", name)
		}
		by[s] += d
	}
	changed := shiftBy(t, by)
	has := make(map[string]bool)
	refs := make(map[string]bool)
	for i := range t.Meta.Offsets {
		o := &t.Meta.Offsets[i]
		has[o.Node] = true
		refs[o.Reference] = true
		if s, ok := t.Syms.Lookup(o.Node); ok && o.Known {
			o.OffsetNS += by[s]
		}
	}
	// A shifted reference node now differs from the reference clock (its
	// old self) by its shift: record it, so the offsets stay consistent.
	for _, name := range names {
		if s, ok := t.Syms.Lookup(name); ok && refs[name] && !has[name] && by[s] != 0 {
			t.Meta.Offsets = append(t.Meta.Offsets, Offset{Node: name, Reference: name, Known: true, OffsetNS: by[s]})
		}
	}
	for _, name := range names {
		t.Meta.Warnings = append(t.Meta.Warnings,
			fmt.Sprintf("timestamps on %s's clock shifted by %v (wirepath skew)", name, time.Duration(shifts[name])))
	}
	return changed, nil
}

// Deskew puts every timestamp of t on the reference clock by removing the
// known node clock offsets of Meta.Offsets, the skewer's second use
// (Project 5 section 7.5.6: removing mean per-node skews from a multi-point
// trace). The offsets it removed become zero (their uncertainty stays). It
// returns how many messages changed and the nodes whose offset was unknown,
// which keep their own clocks.
func Deskew(t *Trace) (changed int, unknown []string) {
	changed, unknown = ApplyOffsets(t)
	if changed > 0 {
		t.Meta.Warnings = append(t.Meta.Warnings, "timestamps moved onto the reference clock by the known node offsets (wirepath skew --deskew)")
	}
	return changed, unknown
}

// ApplyOffsets is Deskew without its warning, for producers that put
// their traces on one clock as they make them (reconcile): each known
// offset removed is added to its AppliedNS, so the trace still says what
// the node's clock was.
func ApplyOffsets(t *Trace) (changed int, unknown []string) {
	by := make([]int64, t.Syms.Len())
	for i := range t.Meta.Offsets {
		o := &t.Meta.Offsets[i]
		s, ok := t.Syms.Lookup(o.Node)
		if !ok {
			continue
		}
		if !o.Known {
			unknown = append(unknown, o.Node)
			continue
		}
		by[s] = -o.OffsetNS
		o.AppliedNS += o.OffsetNS
		o.OffsetNS = 0
	}
	return shiftBy(t, by), unknown
}

// ClampReceives sets the receive time of every message of t that arrives
// before it was sent (on a trace on one clock: what the clock offsets'
// error leaves) to its send time, and returns how many it changed and the
// largest correction. A trace with one timestamp per message is left
// alone.
func ClampReceives(t *Trace) (clamped int, worst Timestamp) {
	if t.Meta.SingleClock {
		return 0, 0
	}
	for i := range t.Messages {
		m := &t.Messages[i]
		if m.SendTS.Known() && m.RecvTS.Known() && m.RecvTS < m.SendTS {
			worst = max(worst, m.SendTS-m.RecvTS)
			m.RecvTS = m.SendTS
			clamped++
		}
	}
	return clamped, worst
}

// shiftBy moves the timestamps of t by the per-node shifts by (indexed by
// node Sym) and returns how many messages changed.
func shiftBy(t *Trace, by []int64) int {
	changed := 0
	for i := range t.Messages {
		m := &t.Messages[i]
		ds, dr := by[m.SrcNode], by[m.DstNode]
		if t.Meta.SingleClock {
			dr = ds
		}
		if m.SendTS.Known() && ds != 0 {
			m.SendTS += Timestamp(ds)
		} else {
			ds = 0
		}
		if m.RecvTS.Known() && dr != 0 {
			m.RecvTS += Timestamp(dr)
		} else {
			dr = 0
		}
		if ds != 0 || dr != 0 {
			changed++
		}
	}
	return changed
}
