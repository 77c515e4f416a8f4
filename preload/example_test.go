package preload_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/wirepath/wirepath/preload"
)

// Reading a trace into the connection table that reconciliation uses.
func ExampleTable() {
	trace := `{"wirepath_preload":1,"tool":"libwpcap","host":"web1","pid":812,"process":"nginx"}
{"ts":1000,"dur":50,"tid":812,"call":"accept4","fd":3,"ret":7,"sock":"tcp","local":"10.0.0.1:80","remote":"10.0.0.9:51000"}
{"ts":2000,"dur":20,"tid":812,"call":"recv","fd":7,"len":8192,"ret":320}
{"ts":3000,"dur":30,"tid":812,"call":"writev","fd":7,"len":5120,"ret":4000}
{"ts":3100,"dur":30,"tid":812,"call":"write","fd":7,"len":1120,"ret":1120}
{"ts":4000,"tid":812,"call":"close","fd":7,"ret":0}
`
	t := preload.NewTable()
	if err := t.ReadFrom(preload.NewReader(strings.NewReader(trace), "web1.jsonl", preload.Options{})); err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range t.Conns {
		fmt.Printf("%s[%d] %s %s %s <- %s\n", c.Process, c.PID, c.Sock, c.Origin, c.Local, c.Remote)
		for _, m := range c.Msgs {
			fmt.Printf("  %s %s bytes [%d,%d) at %d..%d\n", m.Dir, m.Call, m.Offset, m.Offset+m.Bytes, m.TS, m.End)
		}
	}
	// Output:
	// nginx[812] tcp accept 10.0.0.1:80 <- 10.0.0.9:51000
	//   recv recv bytes [0,320) at 2000..2020
	//   send writev bytes [0,4000) at 3000..3030
	//   send write bytes [4000,5120) at 3100..3130
}

// Converting strace output.
func ExampleConvertStrace() {
	in := `4242 1700000000.000100 socket(AF_INET, SOCK_STREAM, IPPROTO_TCP) = 3<TCP:[81234]>
4242 1700000000.000200 connect(3<TCP:[81234]>, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("10.0.0.1")}, 16) = 0
4242 1700000000.000300 write(3<TCP:[10.0.0.9:51000->10.0.0.1:80]>, "GET / HTTP/1.0\r\n\r\n", 18) = 18
4242 1700000000.000400 read(1</dev/null>, "", 10) = 0
`
	w := preload.NewWriter(os.Stdout)
	st, err := preload.ConvertStrace(strings.NewReader(in), "app.strace", w, preload.StraceOptions{Host: "client1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d lines: %d converted, %d ignored\n", st.Lines, st.Converted, st.Ignored)
	// Output:
	// {"wirepath_preload":2,"tool":"strace","host":"client1","pid":4242,"start_ts":1700000000000100000}
	// {"ts":1700000000000100000,"tid":4242,"call":"socket","ret":3,"sock":"tcp"}
	// {"ts":1700000000000200000,"tid":4242,"call":"connect","fd":3,"ret":0,"sock":"tcp","remote":"10.0.0.1:80"}
	// {"ts":1700000000000300000,"tid":4242,"call":"write","fd":3,"len":18,"ret":18,"sock":"tcp","local":"10.0.0.9:51000","remote":"10.0.0.1:80"}
	// 4 lines: 3 converted, 1 ignored
}
