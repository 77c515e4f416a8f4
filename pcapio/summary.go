package pcapio

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// SummaryVersion is the version of the Summary JSON schema.
const SummaryVersion = 1

// Summary is the report of a merge as the merge and stats commands print
// it: the sniffers with their counts, time spans and offsets, the packets
// each pair of sniffers shared, the accounting and the problems. Its JSON
// form is a documented format (docs/pcapio.md).
type Summary struct {
	Version   int              `json:"version"`
	Reference string           `json:"reference"`
	Sniffers  []SnifferSummary `json:"sniffers"`
	Stats     Stats            `json:"accounting"`
	Problems  []string         `json:"problems"`
	// Output is set by the merge command: where the packets went.
	Output *OutputSummary `json:"output,omitempty"`
}

// SnifferSummary is one sniffer with its link type names and its offset.
type SnifferSummary struct {
	Sniffer
	LinkTypeNames []string `json:"link_type_names"`
	Offset        Offset   `json:"offset"`
}

// OutputSummary says what a merge wrote.
type OutputSummary struct {
	File    string `json:"file"`
	Packets int64  `json:"packets"`
}

// Summarize collects m's report; call it after Next returned io.EOF.
func Summarize(m *Merger) *Summary {
	s := &Summary{Version: SummaryVersion, Stats: m.Stats(), Problems: []string{}}
	offs := m.Offsets()
	for i, sn := range m.Sniffers() {
		ss := SnifferSummary{Sniffer: sn, Offset: offs[i], LinkTypeNames: []string{}}
		if ss.LinkTypes == nil {
			ss.LinkTypes = []uint16{}
		}
		for _, lt := range sn.LinkTypes {
			ss.LinkTypeNames = append(ss.LinkTypeNames, LinkTypeName(lt))
		}
		if offs[i].Method == "reference" {
			s.Reference = sn.Name
		}
		s.Sniffers = append(s.Sniffers, ss)
	}
	for _, p := range m.Problems() {
		s.Problems = append(s.Problems, p.Error())
	}
	return s
}

// WriteText writes the summary as aligned tables for people.
func (s *Summary) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "sniffers (clock reference: %s)\n", s.Reference)
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tNAME\tPACKETS\tBYTES\tLINK TYPES\tFIRST (UTC)\tSPAN\tCLOCK")
	for _, sn := range s.Sniffers {
		first, span := "-", "-"
		if sn.Packets > 0 {
			first = time.Unix(0, sn.First).UTC().Format("2006-01-02 15:04:05.000000000")
			span = time.Duration(sn.Last - sn.First).String()
		}
		lts := strings.Join(sn.LinkTypeNames, ",")
		if lts == "" {
			lts = "-"
		}
		fmt.Fprintf(tw, "  %d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", sn.ID, sn.Name, sn.Packets, sn.Bytes, lts, first, span, FormatOffset(sn.Offset))
	}
	tw.Flush()

	if len(s.Sniffers) > 1 || len(s.Stats.Shared) == 1 && s.Stats.Shared[0][0] > 0 {
		fmt.Fprintln(ew, "\npackets seen by both sniffers (diagonal: packets one sniffer saw more than once)")
		tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "\t")
		for _, sn := range s.Sniffers {
			fmt.Fprintf(tw, "%s\t", sn.Name)
		}
		fmt.Fprintln(tw)
		for i, row := range s.Stats.Shared {
			fmt.Fprintf(tw, "%s\t", s.Sniffers[i].Name)
			for _, v := range row {
				fmt.Fprintf(tw, "%d\t", v)
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}

	fmt.Fprintln(ew, "\naccounting")
	tw = tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  FILE\tFORMAT\tCOMPRESSION\tRECORDS\tDECODED\tNON-IP\tUNDECODABLE\tTRUNCATED\tBAD\tCUT\tPROBLEMS")
	row := func(name, format, comp string, c Counts, problems string) {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", name, format, comp,
			c.Records, c.Decoded, c.NonIP, c.Undecodable, c.Truncated, c.BadRecords, c.CutRecords, problems)
	}
	nprob := 0
	for _, f := range s.Stats.Files {
		format, comp := f.Format, f.Compression
		if format == "" {
			format, comp = "-", "-"
		}
		p := fmt.Sprint(f.Problems)
		if !f.Complete {
			p += " (stopped)"
		}
		nprob += f.Problems
		row(f.Name, format, comp, f.Counts, p)
	}
	row("total", "", "", s.Stats.Total, fmt.Sprint(nprob))
	tw.Flush()
	t := s.Stats.Total
	fmt.Fprintf(ew, "  %d records read = %d packets + %d duplicates grouped (window %v)", t.Records, s.Stats.Packets, s.Stats.Duplicates, time.Duration(s.Stats.Window))
	if s.Stats.OutsideTime > 0 {
		fmt.Fprintf(ew, " + %d outside the time bounds", s.Stats.OutsideTime)
	}
	if s.Stats.DroppedCopies > 0 {
		fmt.Fprintf(ew, " + %d copies beyond what a packet keeps, counted only", s.Stats.DroppedCopies)
	}
	fmt.Fprintf(ew, "; %d records dropped (%d bad, %d cut off); %d out of order\n",
		t.BadRecords+t.CutRecords, t.BadRecords, t.CutRecords, s.Stats.OutOfOrder)
	if t.Filtered > 0 {
		fmt.Fprintf(ew, "  %d more records left out by the capture filter\n", t.Filtered)
	}
	if s.Stats.EarlyReleases > 0 {
		fmt.Fprintf(ew, "  %d packets left the dedupe window early: too many were pending\n", s.Stats.EarlyReleases)
	}
	if s.Output != nil {
		fmt.Fprintf(ew, "\nwrote %d packets to %s\n", s.Output.Packets, s.Output.File)
	}
	if len(s.Problems) > 0 {
		fmt.Fprintln(ew, "\nproblems")
		for _, p := range s.Problems {
			fmt.Fprintf(ew, "  %s\n", p)
		}
	}
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}
