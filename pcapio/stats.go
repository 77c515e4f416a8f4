package pcapio

// Counts is the accounting of one file (or of all files): what was read,
// how it decoded and what could not be read. Records = Decoded + NonIP +
// Undecodable; BadRecords and CutRecords were dropped (never delivered).
type Counts struct {
	// Records is the number of packet records read and delivered.
	Records int64 `json:"records"`
	// Bytes is their captured bytes.
	Bytes int64 `json:"bytes"`
	// Decoded counts StatusOK packets (IPv4 or IPv6).
	Decoded int64 `json:"decoded"`
	// NonIP counts StatusNonIP frames (ARP, LLDP, ...), passed through.
	NonIP int64 `json:"non_ip"`
	// Undecodable counts StatusUndecodable frames, passed through.
	Undecodable int64 `json:"undecodable"`
	// Truncated counts delivered packets the snapshot length cut
	// (Packet.Truncated); they are also counted above.
	Truncated int64 `json:"truncated"`
	// BadIPLength counts delivered packets whose IP header claimed more
	// bytes than the frame carried (Packet.BadIPLength); the frame's
	// length was used. Also counted above.
	BadIPLength int64 `json:"bad_ip_length"`
	// BadRecords counts packet records skipped because their block was
	// malformed, they named an undefined interface, or their length field
	// was corrupt (which also ends the file).
	BadRecords int64 `json:"bad_records"`
	// CutRecords counts records cut off by the end of the file.
	CutRecords int64 `json:"cut_records"`
	// Filtered counts records the capture filter (Options.Filter) left
	// out: read, never decoded, not in Records.
	Filtered int64 `json:"filtered"`
}

func (c *Counts) add(o Counts) {
	c.Records += o.Records
	c.Bytes += o.Bytes
	c.Decoded += o.Decoded
	c.NonIP += o.NonIP
	c.Undecodable += o.Undecodable
	c.Truncated += o.Truncated
	c.BadIPLength += o.BadIPLength
	c.BadRecords += o.BadRecords
	c.CutRecords += o.CutRecords
	c.Filtered += o.Filtered
}

func (c *Counts) count(p *Packet) {
	c.Records++
	c.Bytes += int64(len(p.Frame))
	switch p.Status {
	case StatusOK:
		c.Decoded++
	case StatusNonIP:
		c.NonIP++
	default:
		c.Undecodable++
	}
	if p.Truncated {
		c.Truncated++
	}
	if p.BadIPLength {
		c.BadIPLength++
	}
}

// FileStats is the accounting of one input file.
type FileStats struct {
	// Name is the path as given to Open.
	Name string `json:"name"`
	// Format and Compression are "" when the file could not be read.
	Format      string `json:"format,omitempty"`
	Compression string `json:"compression,omitempty"`
	Counts
	// Problems is the number of problems reported for the file (see
	// Merger.Problems); Complete is false when one of them ended it early.
	Problems int  `json:"problems"`
	Complete bool `json:"complete"`
}

// Stats is the accounting of a merge. Once Next has returned io.EOF:
// Total.Records = Packets + Duplicates + DroppedCopies + OutsideTime,
// every observation read is in exactly one Packet returned or counted as
// a dropped copy or outside the time bounds, and
// Total.BadRecords + Total.CutRecords records were dropped.
type Stats struct {
	// Files holds each file's accounting; Total their sum.
	Files []FileStats `json:"files"`
	Total Counts      `json:"total"`
	// Packets counts the packets Next returned.
	Packets int64 `json:"packets"`
	// Duplicates counts the observations grouped into an earlier
	// observation's packet (sum over packets of len(Obs)-1).
	Duplicates int64 `json:"duplicates"`
	// DroppedCopies counts copies of a packet beyond the observations a
	// packet keeps (Options.MaxObservations): counted, not kept.
	DroppedCopies int64 `json:"dropped_copies"`
	// OutsideTime counts observations outside Options.Start and End: read
	// and decoded, then left out (they are in Total.Records).
	OutsideTime int64 `json:"outside_time"`
	// EarlyReleases counts packets returned before their dedupe window
	// ended because the pending packets held Options.MaxPendingBytes.
	EarlyReleases int64 `json:"early_releases"`
	// OutOfOrder counts observations older than one merged before them
	// (an input more out of order than the reorder buffer absorbs).
	OutOfOrder int64 `json:"out_of_order"`
	// Shared[i][j] (i != j) counts packets seen by both sniffers i and j;
	// Shared[i][i] counts packets sniffer i saw more than once (tcpdump -i
	// any sees a forwarded packet on both interfaces).
	Shared [][]int64 `json:"shared"`
	// Window is the dedupe window used, in nanoseconds: the Window option
	// widened by twice the largest offset uncertainty.
	Window int64 `json:"window_ns"`
}

// Sniffer is one capture point: an input file, or one interface of a file
// when interfaces are split.
type Sniffer struct {
	ID SnifferID `json:"id"`
	// Name is the file's base name (its path if two inputs share a base
	// name), plus "#" and the interface name (or index, or nothing when
	// the file has one interface) when split.
	Name string `json:"name"`
	// File is the path as given to Open; Interface the interface index in
	// it, or -1 when the sniffer is the whole file.
	File      string `json:"file"`
	Interface int    `json:"interface"`
	// LinkTypes lists the link types of its packets, in order of first use.
	LinkTypes []uint16 `json:"link_types"`
	// Packets and Bytes count its observations and their captured bytes.
	Packets int64 `json:"packets"`
	Bytes   int64 `json:"bytes"`
	// First and Last are its earliest and latest own timestamps (ns).
	First int64 `json:"first_ns"`
	Last  int64 `json:"last_ns"`
}

func (s *Sniffer) observe(p *Packet, ts int64) {
	if s.Packets == 0 || ts < s.First {
		s.First = ts
	}
	if s.Packets == 0 || ts > s.Last {
		s.Last = ts
	}
	s.Packets++
	s.Bytes += int64(len(p.Frame))
	for _, lt := range s.LinkTypes {
		if lt == p.LinkType {
			return
		}
	}
	s.LinkTypes = append(s.LinkTypes, p.LinkType)
}
