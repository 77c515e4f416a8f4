package trace

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestTSVRoundTrip(t *testing.T) {
	tr := &Trace{Meta: Meta{Source: "test", Offsets: []Offset{{Node: "b", Reference: "a", Known: true, OffsetNS: -5}}}}
	tr.Messages = []Message{
		{SendTS: 1, RecvTS: 2, Src: tr.Intern("10.0.0.1:5000"), Dst: tr.Intern("10.0.0.2:80"), SrcNode: tr.Intern("a"), DstNode: tr.Intern("b"), Bytes: 10, Kind: KindCall, CallID: tr.Intern("c1"), Proto: ProtoTCP},
		{SendTS: NoTime, RecvTS: 7, Src: tr.Intern("-"), Dst: tr.Intern("we\tird"), SrcNode: tr.Intern(`"q"`), DstNode: 0, Bytes: 0, Kind: KindReturn},
	}
	var buf bytes.Buffer
	if err := WriteTSV(&buf, tr); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTSV(&buf, "x", ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != len(tr.Messages) {
		t.Fatalf("got %d messages", len(got.Messages))
	}
	for i := range tr.Messages {
		a, b := tr.Messages[i], got.Messages[i]
		if a.SendTS != b.SendTS || a.RecvTS != b.RecvTS || a.Bytes != b.Bytes || a.Kind != b.Kind || a.Proto != b.Proto ||
			tr.Str(a.Src) != got.Str(b.Src) || tr.Str(a.Dst) != got.Str(b.Dst) || tr.Str(a.SrcNode) != got.Str(b.SrcNode) ||
			tr.Str(a.DstNode) != got.Str(b.DstNode) || tr.Str(a.CallID) != got.Str(b.CallID) {
			t.Errorf("message %d: %+v != %+v", i, a, b)
		}
	}
	if off, ok := got.Meta.OffsetOf("b"); !ok || off != -5 {
		t.Errorf("meta offsets lost: %+v", got.Meta)
	}
}

func TestTSVErrorsNameLineAndColumn(t *testing.T) {
	in := "send_ts\trecv_ts\tsrc_node\tdst_node\n1\t2\ta\tb\nx\t2\ta\tb\n3\t4\ta\n"
	_, err := ReadTSV(strings.NewReader(in), "f.tsv", ReadOptions{Strict: true})
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 3 || pe.Column != "send_ts" {
		t.Fatalf("err = %v", err)
	}
	if got := err.Error(); !strings.HasPrefix(got, "f.tsv:3: column send_ts:") {
		t.Errorf("message %q", got)
	}
	tr, err := ReadTSV(strings.NewReader(in), "f.tsv", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Messages) != 1 || len(tr.Meta.Warnings) != 2 {
		t.Errorf("lenient read: %d messages, warnings %q", len(tr.Messages), tr.Meta.Warnings)
	}
}
