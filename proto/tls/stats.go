package tls

import (
	"fmt"

	"github.com/wirepath/wirepath/proto"
)

// Stats are a Decoder's counters. Every byte fed is, at any moment, in
// exactly one of Framed, Damaged, Skipped, Truncated and Pending (Check).
type Stats struct {
	In        int64 // bytes fed (overlaps excluded)
	Framed    int64 // bytes of whole records
	Damaged   int64 // bytes of records a gap hit
	Skipped   int64 // bytes passed over: not TLS, or searched through after a loss
	Truncated int64 // bytes of records cut off by Close
	Pending   int64 // bytes held: part of a record, server bytes while detecting, the resync window
	Overlap   int64 // bytes fed again (ignored)
	GapBytes  int64 // bytes lost (Gap)

	Records [5]int64 // whole records by type: change_cipher_spec, alert, handshake, application_data, heartbeat

	ClientHellos    int64
	ServerHellos    int64
	HelloRetries    int64
	MalformedHellos int64
	TLS13           int64 // connections that negotiated TLS 1.3
	TLS12           int64 // ... TLS 1.2
	OtherVersions   int64 // ... an older version

	NoKeyLog         int64    // connections seen without a key log
	DecryptedConns   int64    // connections whose keys were set up from the key log
	Undecrypted      [6]int64 // connections not (or no longer) decrypted, by Decrypt outcome
	Fallbacks        int64    // connections that fell back after decryption had started
	RecordsDecrypted int64
	PlainBytes       int64 // plaintext bytes of decrypted application data
	EarlyDataSkipped int64 // 0-RTT records, not decrypted
	KeyUpdates       int64
	SessionTickets   int64
	Renegotiations   int64
	SeqRecovered     int64 // records decrypted by trying past a loss

	MalformedRecords int64 // impossible record headers, or decrypted records without content type
	RecordsLost      int64 // records a gap hit
	FramingLost      int64 // times a direction lost its record framing
	Resyncs          int64 // times it found it again

	ControlUnits int64
	DataUnits    int64
	InnerUnits   int64 // Units of the inner decoder
	MapTrimmed   int64 // times the record map was halved for want of Low
	MapClamped   int64 // inner Units that started before the record map
}

// Check verifies that the byte accounting balances.
func (st Stats) Check() error {
	if sum := st.Framed + st.Damaged + st.Skipped + st.Truncated + st.Pending; sum != st.In {
		return fmt.Errorf("tls: %d bytes in, %d framed + %d damaged + %d skipped + %d truncated + %d pending = %d",
			st.In, st.Framed, st.Damaged, st.Skipped, st.Truncated, st.Pending, sum)
	}
	return nil
}

// Summary returns the counters every decoder shares (see proto.Summary):
// lost bytes are the gaps, which no record's byte count includes. Those of
// the inner decoder of the plaintext are its own.
func (d *Decoder) Summary() proto.Summary {
	st := d.Stats()
	return proto.Summary{In: st.In, GapBytes: st.GapBytes, Framed: st.Framed,
		Unframed: st.Damaged + st.Skipped + st.Truncated, Lost: st.GapBytes, Pending: st.Pending,
		Malformed: st.MalformedRecords + st.MalformedHellos,
		Losses:    st.FramingLost, Resyncs: st.Resyncs, Err: st.Check()}
}
