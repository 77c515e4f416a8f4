package tls

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// KeyLog holds the secrets of an SSLKEYLOGFILE-format key log (NSS's
// format, written by browsers, curl, OpenSSL and Go's
// tls.Config.KeyLogWriter), by client random. It is read-only once read,
// so that many Decoders can share it.
type KeyLog struct {
	byRandom map[[32]byte]*Secrets
	stats    KeyLogStats
}

// Secrets are what a key log says about one connection. TLS 1.2 needs
// Master; TLS 1.3 needs the four traffic secrets.
type Secrets struct {
	Master                       []byte // CLIENT_RANDOM: the 48-byte master secret (TLS 1.2)
	ClientHandshake              []byte // CLIENT_HANDSHAKE_TRAFFIC_SECRET
	ServerHandshake              []byte // SERVER_HANDSHAKE_TRAFFIC_SECRET
	ClientTraffic, ServerTraffic []byte // CLIENT_TRAFFIC_SECRET_0, SERVER_TRAFFIC_SECRET_0
}

// KeyLogStats are the counters of reading a key log.
type KeyLogStats struct {
	Lines    int   // lines read, comments and blank lines included
	Secrets  int   // secrets kept
	Ignored  int   // well-formed lines of labels not used (EXPORTER_SECRET, early traffic)
	Bad      int   // malformed lines, skipped
	FirstBad error // the first malformed line's error, naming the file and line
}

// maxKeyLogLine bounds a key log line: the longest valid one (a label,
// 64 hex digits of random, 96 of secret) is under 200 bytes.
const maxKeyLogLine = 1024

// ErrKeyLogLine is the error of a malformed key log line.
var ErrKeyLogLine = errors.New("malformed key log line")

// KeyLogError is a malformed line of a key log.
type KeyLogError struct {
	File string
	Line int
	Msg  string
}

// Error returns "FILE:LINE: what is wrong".
func (e *KeyLogError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Unwrap returns ErrKeyLogLine.
func (e *KeyLogError) Unwrap() error { return ErrKeyLogLine }

// ReadKeyLog reads a key log from r (name is the file's name, for
// errors). Malformed lines are skipped and counted (Stats); only an error
// reading r is returned.
func ReadKeyLog(r io.Reader, name string) (*KeyLog, error) {
	k := &KeyLog{byRandom: make(map[[32]byte]*Secrets)}
	br := bufio.NewReaderSize(r, 4096)
	for {
		line, n, err := readLine(br)
		if n > 0 {
			k.stats.Lines++
			if msg := k.add(line); msg != "" {
				k.stats.Bad++
				if k.stats.FirstBad == nil {
					k.stats.FirstBad = &KeyLogError{File: name, Line: k.stats.Lines, Msg: msg}
				}
			}
		}
		if err == io.EOF {
			return k, nil
		}
		if err != nil {
			return k, fmt.Errorf("%s: %w", name, err)
		}
	}
}

// readLine returns the next line without its end, and how many bytes it
// took (0 at the end of the input). A line longer than maxKeyLogLine is
// skipped and comes back as a single 0 byte, which no valid line holds,
// so that it is counted as malformed.
func readLine(br *bufio.Reader) ([]byte, int, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull || len(line) > maxKeyLogLine {
		for err == bufio.ErrBufferFull {
			_, err = br.ReadSlice('\n')
		}
		return []byte{0}, 1, err
	}
	return bytes.TrimRight(line, "\r\n"), len(line), err
}

// add adds one line, returning what is wrong with it, if anything.
func (k *KeyLog) add(line []byte) string {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] == '#' {
		return ""
	}
	f := bytes.Fields(line)
	if len(f) != 3 {
		return "want LABEL CLIENT_RANDOM SECRET"
	}
	var random [32]byte
	if len(f[1]) != 64 {
		return "client random is not 32 bytes of hex"
	}
	if _, err := hex.Decode(random[:], f[1]); err != nil {
		return "client random is not 32 bytes of hex"
	}
	secret := make([]byte, hex.DecodedLen(len(f[2])))
	if _, err := hex.Decode(secret, f[2]); err != nil || len(secret) < 16 || len(secret) > 64 {
		return "secret is not 16 to 64 bytes of hex"
	}
	s := k.byRandom[random]
	if s == nil {
		s = new(Secrets)
	}
	switch string(f[0]) {
	case "CLIENT_RANDOM":
		if len(secret) != 48 {
			return "CLIENT_RANDOM secret is not 48 bytes"
		}
		s.Master = secret
	case "CLIENT_HANDSHAKE_TRAFFIC_SECRET":
		s.ClientHandshake = secret
	case "SERVER_HANDSHAKE_TRAFFIC_SECRET":
		s.ServerHandshake = secret
	case "CLIENT_TRAFFIC_SECRET_0":
		s.ClientTraffic = secret
	case "SERVER_TRAFFIC_SECRET_0":
		s.ServerTraffic = secret
	default:
		k.stats.Ignored++
		return ""
	}
	k.byRandom[random] = s
	k.stats.Secrets++
	return ""
}

// Lookup returns the secrets logged for a client random, or nil.
func (k *KeyLog) Lookup(clientRandom [32]byte) *Secrets {
	if k == nil {
		return nil
	}
	return k.byRandom[clientRandom]
}

// Stats returns the counters of reading the key log.
func (k *KeyLog) Stats() KeyLogStats { return k.stats }

// Len returns how many connections the key log has secrets for.
func (k *KeyLog) Len() int { return len(k.byRandom) }
