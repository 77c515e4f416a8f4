package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/trace"
)

// The reconcile test system's captures and syscall traces
// (reconcile/testdata/system/make.sh).
var sysDir = filepath.Join("..", "..", "reconcile", "testdata", "system")

func TestReconcileGolden(t *testing.T) {
	cs := filepath.Join(sysDir, "clientside.pcapng")
	web := filepath.Join(sysDir, "web.pcap")
	traces := filepath.Join(sysDir, "traces")
	out := filepath.Join(t.TempDir(), "t.tsv")
	runGolden(t, []cliCase{
		{name: "reconcile-process", args: []string{"reconcile", "--naming", "process", "--preload", traces, cs, web}, wantCode: 0},
		{name: "reconcile-role-json", args: []string{"reconcile", "--naming", "role", "--json", "-o", out, cs, web}, wantCode: 0},
		{name: "reconcile-no-args", args: []string{"reconcile"}, wantCode: 2},
		{name: "reconcile-bad-naming", args: []string{"reconcile", "--naming", "pid", cs}, wantCode: 2},
		{name: "reconcile-json-stdout", args: []string{"reconcile", "--json", cs}, wantCode: 2},
		{name: "reconcile-missing-roles", args: []string{"reconcile", "--roles", "testdata/no-such-roles", cs}, wantCode: 1},
	})
}

// The trace written with -o reads back; a roles map names the nodes; a
// bad syscall trace line is skipped with a warning and exit status 3.
func TestReconcileFiles(t *testing.T) {
	dir := t.TempDir()
	roles := filepath.Join(dir, "roles")
	if err := os.WriteFile(roles, []byte("10.30.2.11 web\n10.30.2.21:7000 db\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "t.jsonl.gz")
	var stdout, stderr bytes.Buffer
	code := runArgs(&stdout, &stderr, "reconcile", "-q", "--naming", "role", "--roles", roles, "-o", out,
		filepath.Join(sysDir, "clientside.pcapng"), filepath.Join(sysDir, "web.pcap"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	tr, err := trace.ReadFile(out, trace.ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, m := range tr.Messages {
		nodes[tr.Str(m.SrcNode)], nodes[tr.Str(m.DstNode)] = true, true
	}
	for _, n := range []string{"web:8080", "db", "10.30.1.2", "10.30.1.3"} {
		if !nodes[n] {
			t.Errorf("no node %s in %v", n, nodes)
		}
	}
	if len(tr.Meta.Clocks) != 2 || len(tr.Meta.Offsets) == 0 {
		t.Errorf("meta: clocks %v, offsets %v", tr.Meta.Clocks, tr.Meta.Offsets)
	}

	// A syscall trace with a bad line.
	bad := filepath.Join(dir, "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := filepath.Glob(filepath.Join(sysDir, "traces", "*.jsonl"))
	if err != nil || len(src) == 0 {
		t.Fatal(src, err)
	}
	b, err := os.ReadFile(src[0])
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, []byte("{\"ts\": \"yesterday\"}\n")...)
	if err := os.WriteFile(filepath.Join(bad, "t.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	code = runArgs(&stdout, &stderr, "reconcile", "-q", "--preload", bad, "-o", filepath.Join(dir, "u.tsv"), filepath.Join(sysDir, "web.pcap"))
	if code != 3 || !strings.Contains(stderr.String(), "t.jsonl") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
}

// wirepath messages undoes NAT: on the NAT test captures no message names
// the load balancer's virtual address; with --no-nat some do.
func TestMessagesNAT(t *testing.T) {
	var caps []string
	for _, f := range []string{"outside.pcap", "inside.pcap", "c1.pcapng", "s1.pcap"} {
		caps = append(caps, filepath.Join("..", "..", "testdata", "nat", f))
	}
	count := func(args ...string) (vip, all int) {
		var stdout, stderr bytes.Buffer
		code := runArgs(&stdout, &stderr, append(append([]string{"messages", "-q", "--format", "jsonl"}, args...), caps...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			var m struct{ Src, Dst string }
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatal(err)
			}
			all++
			if strings.HasPrefix(m.Dst, "192.0.2.100:") || strings.HasPrefix(m.Src, "192.0.2.100:") {
				vip++
			}
		}
		return
	}
	if vip, all := count(); vip != 0 || all == 0 {
		t.Errorf("with NAT undone: %d of %d messages name the virtual address", vip, all)
	}
	if vip, _ := count("--no-nat"); vip == 0 {
		t.Errorf("without: no message names the virtual address")
	}
}
