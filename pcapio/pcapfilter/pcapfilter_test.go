package pcapfilter

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirepath/wirepath/pcapio"
)

// captures are the repository's captures of several link types
// (Ethernet, Linux cooked v1 and v2, VLAN tags, pcapng with interfaces).
var captures = []string{
	"../../testdata/captures/client.pcap",
	"../../testdata/captures/server.pcapng",
	"../../testdata/captures/router-sll1.pcap",
	"../../testdata/captures/router-any.pcap.zst",
	"../../testdata/captures/vlan.pcap",
	"../../testdata/nat/outside.pcap",
	"../../testdata/demo/lb-any.pcap.gz",
}

var exprs = []string{
	"tcp",
	"udp port 53",
	"tcp port 8080 or udp",
	"host 10.77.1.2 and not tcp",
	"ip6",
	"tcp[tcpflags] & tcp-syn != 0",
	"greater 200",
	"vlan",
}

// TestAgainstTcpdump: every record a filter keeps is one tcpdump keeps
// with the same expression, on every capture and link type.
func TestAgainstTcpdump(t *testing.T) {
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Skip("tcpdump is not installed")
	}
	if _, err := Compile("tcp"); err != nil {
		t.Skip(err)
	}
	for _, c := range captures {
		plain := decompressed(t, c)
		for _, e := range exprs {
			f, err := Compile(e)
			if err != nil {
				t.Fatalf("%q: %v", e, err)
			}
			got, cerr := count(t, plain, f)
			out, err := exec.Command(tcpdump, "-r", plain, "-nn", "-q", e).Output()
			if cerr != nil || err != nil {
				// The expression does not apply to the link type (vlan on
				// Linux cooked captures): tcpdump refuses it too.
				if (cerr == nil) != (err == nil) {
					t.Errorf("%s, %q: our error %v, tcpdump's %v", filepath.Base(c), e, cerr, err)
				}
				continue
			}
			want := 0
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				want++
			}
			if got != want {
				t.Errorf("%s, %q: %d records, tcpdump %d", filepath.Base(c), e, got, want)
			}
		}
	}
}

// decompressed returns c as a plain file tcpdump reads.
func decompressed(t *testing.T, c string) string {
	t.Helper()
	if !strings.HasSuffix(c, ".gz") && !strings.HasSuffix(c, ".zst") {
		return c
	}
	r, err := pcapio.OpenFile(c)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	tool := "gzip"
	if strings.HasSuffix(c, ".zst") {
		tool = "zstd"
	}
	out, err := exec.Command(tool, "-dc", c).Output()
	if err != nil {
		t.Skipf("%s: %v", tool, err)
	}
	p := filepath.Join(t.TempDir(), "plain.pcap")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func count(t *testing.T, path string, f *Filter) (int, error) {
	t.Helper()
	r, err := pcapio.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	var rec pcapio.Record
	for {
		err := r.ReadRecord(&rec)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		ok, err := f.Match(rec.LinkType, rec.Data, rec.WireLen)
		if err != nil {
			return 0, err
		}
		if ok {
			n++
		}
	}
}

// TestBadExpression: a syntax error is the compiler's message.
func TestBadExpression(t *testing.T) {
	if _, err := Compile("tcp port"); err == nil || !strings.Contains(err.Error(), "tcp port") {
		t.Errorf("error %v", err)
	}
}
