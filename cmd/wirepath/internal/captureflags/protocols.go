package captureflags

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/flows"
	ptls "github.com/wirepath/wirepath/proto/tls"
	"github.com/wirepath/wirepath/trace"
)

// Protocols are the flags that say how application protocols are framed:
// ports known to carry a protocol, the TLS key log, and the evidence
// taken per message.
type Protocols struct {
	KeyLog     string
	Ports      []string // PORT=NAME
	Tokens     int
	NoTokens   bool
	NoEvidence bool
}

// protoNames lists the names --proto takes, for its help.
const protoNames = "h2 (grpc), tls, pgsql, mysql, redis, memcache, kafka, http, dns, none"

// Register adds the flags to fs.
func (p *Protocols) Register(fs *pflag.FlagSet) {
	fs.StringVar(&p.KeyLog, "tls-keylog", "", "TLS key log `FILE` (SSLKEYLOGFILE format, as curl, browsers and Go's KeyLogWriter write) to decrypt TLS connections and frame the HTTP/2 or HTTP/1.x inside")
	fs.StringArrayVar(&p.Ports, "proto", nil, "`PORT=NAME`: decode TCP connections to PORT as protocol NAME whatever their first bytes ("+protoNames+"); repeatable")
	fs.IntVar(&p.Tokens, "tokens", flows.DefaultMaxTokens, fmt.Sprintf("content tokens kept per message: the hashes of its path segments, keys, literals (0-%d)", trace.MaxTokens))
	fs.BoolVar(&p.NoTokens, "no-tokens", false, "keep no content tokens (propagated request ids are still taken)")
	fs.BoolVar(&p.NoEvidence, "no-evidence", false, "take neither propagated request ids nor content tokens (labels are still taken)")
}

// Validate checks the flags without reading the key log.
func (p *Protocols) Validate() error {
	_, err := p.ports()
	if err == nil && (p.Tokens < 0 || p.Tokens > trace.MaxTokens) {
		err = cmdutil.UsageErrorf("--tokens must be between 0 and %d, not %d", trace.MaxTokens, p.Tokens)
	}
	return err
}

// ports parses --proto.
func (p *Protocols) ports() (map[uint16]flows.App, error) {
	if len(p.Ports) == 0 {
		return nil, nil
	}
	m := make(map[uint16]flows.App, len(p.Ports))
	for _, s := range p.Ports {
		port, name, ok := strings.Cut(s, "=")
		n, err := strconv.ParseUint(port, 10, 16)
		if !ok || err != nil || n == 0 {
			return nil, cmdutil.UsageErrorf("--proto %q: want PORT=NAME with a port from 1 to 65535", s)
		}
		app, ok := flows.ParseApp(strings.ToLower(name))
		if !ok {
			return nil, cmdutil.UsageErrorf("--proto %q: unknown protocol %q (one of %s)", s, name, protoNames)
		}
		m[uint16(n)] = app
	}
	return m, nil
}

// Apply sets the protocol options of cfg, reading the key log. It returns
// warnings about the key log (malformed lines were skipped).
func (p *Protocols) Apply(cfg *flows.Config) ([]string, error) {
	ports, err := p.ports()
	if err != nil {
		return nil, err
	}
	cfg.Ports = ports
	cfg.MaxTokens = p.Tokens
	if p.NoTokens {
		cfg.MaxTokens = 0
	}
	cfg.Evidence = !p.NoEvidence
	if p.KeyLog == "" {
		return nil, nil
	}
	f, err := os.Open(p.KeyLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	kl, err := ptls.ReadKeyLog(f, p.KeyLog)
	if err != nil {
		return nil, err
	}
	cfg.KeyLog = kl
	var warns []string
	st := kl.Stats()
	if st.Bad > 0 {
		warns = append(warns, fmt.Sprintf("TLS key log: %d malformed lines skipped (the first: %v)", st.Bad, st.FirstBad))
	}
	if st.Secrets == 0 {
		warns = append(warns, fmt.Sprintf("TLS key log %s holds no secrets: no connection can be decrypted", p.KeyLog))
	}
	return warns, nil
}
