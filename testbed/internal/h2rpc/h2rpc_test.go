package h2rpc

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// TestConcurrentCalls: 64 concurrent calls over one connection to
// net/http's server each get their own answer, and the ordinals the client
// logs are those of the wire: requests in stream order, responses each
// numbered once.
func TestConcurrentCalls(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer("", Serve(map[string]Handler{"/t.S/Echo": func(r *http.Request, msg []byte) ([]byte, int) {
		return append([]byte(r.Header.Get("x-hop-id")+":"), msg...), len(msg) % 3
	}}))
	go srv.Serve(l)
	defer srv.Close()
	c, err := Dial(l.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 64
	infos := make([]CallInfo, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("m%d", i)
			resp, info, err := c.Call("/t.S/Echo", [][2]string{{"x-hop-id", fmt.Sprint(i)}}, []byte(msg), 5*time.Second)
			if err != nil || string(resp) != fmt.Sprintf("%d:%s", i, msg) || info.Status != len(msg)%3 {
				t.Errorf("call %d: %q %+v %v", i, resp, info, err)
			}
			infos[i] = info
		}()
	}
	wg.Wait()
	req, resp := map[int]bool{}, map[int]bool{}
	for _, in := range infos {
		if in.ReqOrd != int(in.Stream-1)/2 || req[in.ReqOrd] || resp[in.RespOrd] || in.RecvNS < in.SendNS || in.Local == "" {
			t.Fatalf("info %+v", in)
		}
		req[in.ReqOrd], resp[in.RespOrd] = true, true
	}
	for i := range n {
		if !req[i] || !resp[i] {
			t.Fatalf("ordinal %d missing", i)
		}
	}
}
