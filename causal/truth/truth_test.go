package truth

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/internal/fuzzseed"
)

// sample is a request client→web→app with its RETURNs, and a background
// call.
func sample() *File {
	return &File{
		Meta: Meta{Variant: "ids", Tracing: "sniffed", InFlight: 1, Requests: 1, WindowStartNS: 1, WindowEndNS: 100,
			Checks: []Check{{Name: "request_answered", Held: 1}}},
		Conns: []Conn{
			{ID: 0, Proto: "tcp", Client: "198.51.100.2:40000", Server: "198.51.100.100:80", ClientInside: "203.0.113.1:40000", ServerInside: "203.0.113.11:80", Caller: "client", Callee: "web"},
			{ID: 1, Proto: "tcp", Client: "203.0.113.11:50000", Server: "203.0.113.21:8080", Caller: "web", Callee: "app"},
			{ID: 2, Proto: "udp", Client: "203.0.113.21:5353", Server: "203.0.113.31:53", Caller: "app", Callee: "dns"},
		},
		Requests: []Request{{ID: 0, Kind: "item-hit", Root: 0, Calls: 2}, {ID: 1, Kind: "bg-refresh", Background: true, Root: 4, Calls: 1}},
		Messages: []Message{
			{ID: 0, Request: 0, Conn: 0, Dir: Call, SendNS: 10, Parent: -1, Call: 0, CallParent: -1},
			{ID: 1, Request: 0, Conn: 1, Dir: Call, RecvNS: 12, Parent: 0, Call: 1, CallParent: 0},
			{ID: 2, Request: 0, Conn: 1, Dir: Return, SendNS: 14, Parent: 1, Call: 1, CallParent: 0},
			{ID: 3, Request: 0, Conn: 0, Dir: Return, RecvNS: 16, Parent: 2, Call: 0, CallParent: -1},
			{ID: 4, Request: 1, Conn: 2, Dir: Call, SendNS: 20, Parent: -1, Call: 4, CallParent: -1},
			{ID: 5, Request: 1, Conn: 2, Dir: Return, RecvNS: 22, Parent: 4, Call: 4, CallParent: -1},
		},
	}
}

func TestRoundTrip(t *testing.T) {
	f := sample()
	var buf bytes.Buffer
	if err := Write(&buf, f); err != nil {
		t.Fatal(err)
	}
	if !IsTruth(buf.Bytes()) {
		t.Error("IsTruth does not recognise a written truth")
	}
	g, err := Read(&buf, "sample")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f, g) {
		t.Errorf("round trip changed the truth:\n%+v\n%+v", f, g)
	}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		edit func(f *File)
		want string // "" = valid
	}{
		{"valid", func(f *File) {}, ""},
		{"multiplexed: the RETURN shares the stream, not the ordinal", func(f *File) {
			f.Messages[1].Stream, f.Messages[2].Stream, f.Messages[2].Ordinal = 5, 5, 3
		}, ""},
		{"multiplexed: another stream", func(f *File) {
			f.Messages[1].Stream, f.Messages[2].Stream, f.Messages[2].Ordinal = 5, 7, 3
		}, "is not the CALL of this message's connection and ordinal (or stream)"},
		{"conn id", func(f *File) { f.Conns[1].ID = 5 }, "conn 1 has id 5"},
		{"proto", func(f *File) { f.Conns[1].Proto = "sctp" }, `proto "sctp"`},
		{"request id", func(f *File) { f.Requests[1].ID = 0 }, "request 1 has id 0"},
		{"message id", func(f *File) { f.Messages[2].ID = 7 }, "message 2: id 7"},
		{"request missing", func(f *File) { f.Messages[2].Request = 9 }, "request 9 does not exist"},
		{"conn missing", func(f *File) { f.Messages[2].Conn = 9 }, "conn 9 does not exist"},
		{"dir", func(f *File) { f.Messages[2].Dir = "REPLY" }, `dir "REPLY"`},
		{"parent later", func(f *File) { f.Messages[1].Parent = 3 }, "parent 3 is not an earlier message"},
		{"parent in another request", func(f *File) { f.Messages[5].Parent = 3 }, "parent 3 is in another request"},
		{"second root", func(f *File) { f.Messages[1].Parent = -1; f.Messages[1].CallParent = -1; f.Messages[2].CallParent = -1 }, "second root"},
		{"root is a RETURN", func(f *File) { f.Requests[1].Root = 5; f.Messages[4].Parent = 0 }, "parent 0 is in another request"},
		{"return on another ordinal", func(f *File) { f.Messages[2].Ordinal = 1 }, "is not the CALL of this message's connection and ordinal"},
		{"call parent differs", func(f *File) { f.Messages[2].CallParent = -1 }, "call parent -1 differs"},
		{"call parent not a call", func(f *File) { f.Messages[1].CallParent = 3; f.Messages[2].CallParent = 3 }, "not an earlier CALL"},
		{"duplicate ordinal", func(f *File) {
			f.Messages[4].Conn, f.Messages[5].Conn = 1, 1
		}, "are both CALL 0 on conn 1"},
		{"wrong root", func(f *File) { f.Requests[0].Root = 1 }, "request 0: root 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := sample()
			tc.edit(f)
			err := f.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.want != "" && err == nil:
				t.Errorf("no error, want %q", tc.want)
			case tc.want != "" && (!strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrFormat)):
				t.Errorf("error %v, want %q wrapping ErrFormat", err, tc.want)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	var good bytes.Buffer
	if err := Write(&good, sample()); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(good.String(), "\n")
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", "f:0: bad testbed truth: empty file"},
		{"no header", lines[1], "f:1: bad testbed truth: no header line"},
		{"other version", `{"wirepath_testbed_truth":3,"meta":{}}` + "\n", "f:1: bad testbed truth: version 3, this build reads 1 to 2"},
		{"bad json", lines[0] + "{\"type\":\n", "f:2: bad testbed truth"},
		{"bad member", lines[0] + `{"type":"msg","id":"x"}` + "\n", "f:2: bad testbed truth"},
		{"inconsistent", strings.Join(lines[:len(lines)-3], ""), "f: bad testbed truth: request 1: root 4"},
		{"unknown record types are skipped", lines[0] + `{"type":"later","x":1}` + "\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tc.in), "f")
			if tc.want == "" {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	// Seeds from the repository's test data (internal/fuzzseed).
	fuzzseed.Files(f, "causal/score/testdata/testbed/*.truth.jsonl")
	var good bytes.Buffer
	if err := Write(&good, sample()); err != nil {
		f.Fatal(err)
	}
	f.Add(good.Bytes())                                                                             // a valid truth
	f.Add([]byte(`{"wirepath_testbed_truth":1}` + "\n"))                                            // a header alone
	f.Add([]byte(`{"wirepath_testbed_truth":1}` + "\n{\"type\":\"msg\",\"id\":0,\"parent\":-1}\n")) // a message of no request
	f.Add([]byte("not json"))                                                                       // no header
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := Read(bytes.NewReader(b), "fuzz")
		if err != nil {
			return
		}
		// What was read is consistent and survives a round trip.
		if err := g.Check(); err != nil {
			t.Fatalf("Read returned a truth that fails Check: %v", err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, g); err != nil {
			t.Fatal(err)
		}
		h, err := Read(&buf, "again")
		if err != nil {
			t.Fatalf("a written truth does not read back: %v", err)
		}
		if len(h.Messages) != len(g.Messages) || len(h.Requests) != len(g.Requests) || len(h.Conns) != len(g.Conns) {
			t.Fatal("round trip changed the counts")
		}
	})
}
