package tls

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/wirepath/wirepath/proto"
	"github.com/wirepath/wirepath/proto/evidence"
	"github.com/wirepath/wirepath/proto/grpctest"
)

// serverName is the name the test certificates are for.
const serverName = "wirepath.test"

// testCert makes a self-signed ECDSA certificate for serverName and
// 127.0.0.1, and a pool that trusts it.
func testCert(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: serverName},
		DNSNames: []string{serverName}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}, pool
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// sink is an Inner that keeps the plaintext it is given.
type sink struct {
	t     testing.TB
	buf   [2]bytes.Buffer
	feeds [2]int
	gaps  [2]int64
}

func (k *sink) Feed(dir proto.Dir, off int64, b []byte) {
	if want := int64(k.buf[dir].Len()) + k.gaps[dir]; off != want {
		k.t.Errorf("%s plaintext at offset %d, want %d", dir, off, want)
	}
	k.buf[dir].Write(b)
	k.feeds[dir]++
}

func (k *sink) Gap(dir proto.Dir, off, n int64) { k.gaps[dir] += n }
func (k *sink) Close()                          {}
func (k *sink) Next(*proto.Unit) bool           { return false }

// result is what decoding a recorded connection gave.
type result struct {
	units []proto.Unit
	stats Stats
	info  Info
	sink  *sink
}

// decode feeds a recorded connection to a new Decoder, each event split
// into pieces of at most chunk bytes (0: whole).
func decode(t testing.TB, kl *KeyLog, events []grpctest.Event, chunk int) result {
	t.Helper()
	k := &sink{t: t}
	d := New(Config{KeyLog: kl, NewInner: func(string) Inner { return k }})
	var off [2]int64
	var units []proto.Unit
	var u proto.Unit
	for _, e := range events {
		for b := e.Data; len(b) > 0; {
			n := len(b)
			if chunk > 0 {
				n = min(n, chunk)
			}
			d.Feed(e.Dir, off[e.Dir], b[:n])
			off[e.Dir] += int64(n)
			b = b[n:]
		}
		for d.Next(&u) {
			units = append(units, keep(u))
		}
	}
	d.Close()
	for d.Next(&u) {
		units = append(units, keep(u))
	}
	st := d.Stats()
	if err := st.Check(); err != nil {
		t.Fatal(err)
	}
	return result{units, st, d.Info(), k}
}

// count returns how many Units of dir have kind k.
func count(units []proto.Unit, dir proto.Dir, k proto.Kind) int {
	n := 0
	for _, u := range units {
		if u.Dir == dir && u.Kind == k {
			n++
		}
	}
	return n
}

// format prints Units one a line.
func format(units []proto.Unit) string {
	var b strings.Builder
	for _, u := range units {
		fmt.Fprintf(&b, "%s %-8s key=%d [%d,%d) bytes=%d status=%d %q\n", u.Dir, u.Kind, u.Key, u.Start, u.End, u.Bytes, u.Status, u.Label)
	}
	return b.String()
}

// readKeyLog parses a key log held in memory.
func readKeyLog(t testing.TB, b []byte) *KeyLog {
	t.Helper()
	kl, err := ReadKeyLog(bytes.NewReader(b), "keylog")
	if err != nil {
		t.Fatal(err)
	}
	if st := kl.Stats(); st.Bad != 0 {
		t.Fatalf("key log: %+v", st)
	}
	return kl
}

// keep returns u with a copy of its Evidence: a decoder reuses the
// Evidence of the Units taken once it is fed again.
func keep(u proto.Unit) proto.Unit {
	u.Evidence = evidence.Clone(u.Evidence)
	return u
}
