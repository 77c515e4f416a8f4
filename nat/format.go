package nat

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wirepath/wirepath/trace"
)

// FormatVersion is the version of the JSON table WriteJSON writes.
const FormatVersion = 1

// JSONMapping is one mapping in the JSON table (docs/nat.md).
type JSONMapping struct {
	Proto       string  `json:"proto"`
	Kind        string  `json:"kind"`
	Outside     string  `json:"outside"`
	Inside      string  `json:"inside"`
	Direction   string  `json:"direction,omitempty"`
	DecidedBy   string  `json:"decided_by,omitempty"`
	Conns       int     `json:"conns"`
	PortsKept   *int    `json:"ports_kept,omitempty"`
	Matches     int     `json:"matches"`
	DataMatches int     `json:"data_matches"`
	Random      int     `json:"random_matches"`
	TwoWay      int     `json:"two_way_conns"`
	Evidence    float64 `json:"evidence"`
	Agreement   float64 `json:"agreement"`
	Coverage    float64 `json:"coverage"`
	Score       float64 `json:"score"`
	FirstNS     int64   `json:"first_ns"`
	LastNS      int64   `json:"last_ns"`
	Reason      string  `json:"reason,omitempty"`
}

// JSONClock is one ClockOffset in the JSON table.
type JSONClock struct {
	A           string `json:"a"`
	B           string `json:"b"`
	Known       bool   `json:"known"`
	OffsetNS    int64  `json:"offset_ns"`
	Uncertainty int64  `json:"uncertainty_ns"`
	MinABNS     int64  `json:"min_ab_ns"`
	MinBANS     int64  `json:"min_ba_ns"`
	SamplesAB   int    `json:"samples_ab"`
	SamplesBA   int    `json:"samples_ba"`
}

// JSONTable is the document WriteJSON writes.
type JSONTable struct {
	Version    int           `json:"version"`
	Mappings   []JSONMapping `json:"mappings"`
	Rejected   []JSONMapping `json:"rejected,omitempty"`
	Clocks     []JSONClock   `json:"clocks,omitempty"`
	Accounting []trace.Count `json:"accounting"`
}

func round(x float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	if x < 0 {
		return -float64(int64(-x*p+0.5)) / p
	}
	return float64(int64(x*p+0.5)) / p
}

func (m *Mapping) jsonForm() JSONMapping {
	j := JSONMapping{
		Proto:       ProtoName(m.Proto),
		Kind:        m.Kind.String(),
		Outside:     m.OutsideString(),
		Inside:      m.InsideString(),
		Direction:   m.Direction,
		DecidedBy:   m.DecidedBy,
		Conns:       m.Conns,
		Matches:     m.Matches,
		DataMatches: m.DataMatches,
		Random:      m.RandomMatches,
		TwoWay:      m.TwoWay,
		Evidence:    round(m.Evidence, 3),
		Agreement:   round(m.Agreement, 3),
		Coverage:    round(m.Coverage, 3),
		Score:       round(m.Score, 3),
		FirstNS:     m.FirstNS,
		LastNS:      m.LastNS,
		Reason:      m.Reason,
	}
	if m.AnyPort && hasPorts(m.Proto) {
		k := m.PortsKept
		j.PortsKept = &k
	}
	return j
}

// JSON returns the table in its JSON form; rejected mappings are included
// when withRejected is set.
func (t *Table) JSON(withRejected bool) JSONTable {
	j := JSONTable{Version: FormatVersion, Mappings: []JSONMapping{}, Accounting: t.Accounting()}
	for i := range t.Mappings {
		j.Mappings = append(j.Mappings, t.Mappings[i].jsonForm())
	}
	if withRejected {
		for i := range t.Rejected {
			j.Rejected = append(j.Rejected, t.Rejected[i].jsonForm())
		}
	}
	for _, c := range t.Clocks {
		j.Clocks = append(j.Clocks, JSONClock{
			A: t.snifferName(c.A), B: t.snifferName(c.B), Known: c.Known,
			OffsetNS: c.Offset, Uncertainty: c.Uncertainty, MinABNS: c.MinAB, MinBANS: c.MinBA,
			SamplesAB: c.SamplesAB, SamplesBA: c.SamplesBA,
		})
	}
	return j
}

// WriteJSON writes the table as indented JSON.
func (t *Table) WriteJSON(w io.Writer, withRejected bool) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(t.JSON(withRejected))
}

func fmtTime(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000Z")
}

// WriteText writes the mapping table and the accounting for people. With
// withRejected the rejected candidates follow, with their reasons.
func (t *Table) WriteText(w io.Writer, withRejected bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d mapping(s), %d rejected, from %d matched packet(s) in %d examined\n",
		len(t.Mappings), len(t.Rejected), t.Stats.Matches, t.Stats.Packets)
	writeRows := func(title string, ms []Mapping, reasons bool) {
		if len(ms) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n%s\n", title)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		hdr := "PROTO\tKIND\tOUTSIDE\tINSIDE\tDIRECTION\tBY\tCONNS\tMATCHES\tDATA\tSCORE\tFIRST\tLAST"
		if reasons {
			hdr += "\tREASON"
		}
		fmt.Fprintln(tw, hdr)
		for i := range ms {
			m := &ms[i]
			dir := m.Direction
			if dir == "" {
				dir = "?"
			}
			by := m.DecidedBy
			if by == "" {
				by = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%.2f\t%s\t%s",
				ProtoName(m.Proto), m.Kind, m.OutsideString(), m.InsideString(), dir, by,
				m.Conns, m.Matches, m.DataMatches, m.Score, fmtTime(m.FirstNS), fmtTime(m.LastNS))
			if reasons {
				fmt.Fprintf(tw, "\t%s", m.Reason)
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	writeRows("Mappings (outside name <-> inside, real name):", t.Mappings, false)
	if withRejected {
		writeRows("Rejected candidates:", t.Rejected, true)
	}
	if len(t.Clocks) > 0 {
		b.WriteString("\nSniffer clocks from translated packets (B's corrected clock minus A's):\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "A\tB\tOFFSET\tUNCERTAINTY\tPACKETS A->B\tB->A")
		for _, c := range t.Clocks {
			off, unc := "?", "-"
			if c.Known {
				off = fmt.Sprintf("%+v", time.Duration(c.Offset))
				unc = fmt.Sprintf("±%v", time.Duration(c.Uncertainty))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\n", t.snifferName(c.A), t.snifferName(c.B), off, unc, c.SamplesAB, c.SamplesBA)
		}
		tw.Flush()
	}
	b.WriteString("\nAccounting:\n")
	for _, c := range t.Accounting() {
		fmt.Fprintf(&b, "  %-30s %12d\n", strings.ReplaceAll(c.Name, "_", " "), c.Value)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
