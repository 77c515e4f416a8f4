package trace_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/wirepath/wirepath/trace"
)

// A Project 5 trace read as input: one clock, so both timestamps are the
// same, and node names without endpoints.
func ExampleRead_project5() {
	in := "1047680084.482205\tCALL_SENT\tnodeA\tnodeB\tid37\n" +
		"1047680084.483575\tRET_SENT\tnodeB\tnodeA\tid37\n"
	t, err := trace.Read(strings.NewReader(in), "p5.txt", trace.ReadOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range t.Messages {
		fmt.Println(m.SendTS, m.Kind, t.Str(m.SrcNode), "->", t.Str(m.DstNode), t.Str(m.CallID))
	}
	// Output:
	// 1047680084482205000 CALL nodeA -> nodeB id37
	// 1047680084483575000 RETURN nodeB -> nodeA id37
}

// Streaming a trace of any format without holding it in memory; bad lines
// are skipped and counted.
func ExampleReader() {
	in := `{"wirepath_trace":1}
{"send_ts":1000,"recv_ts":1500,"src_node":"a","dst_node":"b","bytes":10,"kind":"CALL"}
{"send_ts":"oops"}
{"send_ts":2000,"src_node":"b","dst_node":"a","bytes":99,"kind":"RETURN"}
`
	r := trace.NewReader(strings.NewReader(in), "t.jsonl", trace.ReadOptions{})
	defer r.Close()
	var total int64
	for r.Scan() {
		m := r.Message()
		total += m.Bytes
	}
	if err := r.Err(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Format(), total, "bytes;", r.Skipped(), "skipped")
	fmt.Println(r.Trace().Meta.Warnings[0])
	// Output:
	// jsonl 109 bytes; 1 skipped
	// skipped t.jsonl:3: column send_ts: wrong JSON type
}

func ExampleWriteJSONL() {
	t := &trace.Trace{}
	t.Messages = append(t.Messages, trace.Message{
		SendTS: 1700000000000000000, RecvTS: trace.NoTime,
		Src: t.Intern("10.0.0.1:40000"), Dst: t.Intern("10.0.0.2:80"),
		SrcNode: t.Intern("web"), DstNode: t.Intern("db"),
		Bytes: 120, Kind: trace.KindCall, Proto: trace.ProtoTCP,
	})
	trace.WriteJSONL(os.Stdout, t)
	// Output:
	// {"wirepath_trace":1}
	// {"send_ts":1700000000000000000,"src":"10.0.0.1:40000","dst":"10.0.0.2:80","src_node":"web","dst_node":"db","bytes":120,"kind":"CALL","proto":"tcp"}
}
