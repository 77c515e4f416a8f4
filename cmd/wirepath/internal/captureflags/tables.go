package captureflags

import (
	"sync"

	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/flows"
	"github.com/wirepath/wirepath/pcapio"
	"github.com/wirepath/wirepath/pipeline"
	"github.com/wirepath/wirepath/tables"
)

// Tables is the --parquet flag: the run's observations, messages,
// connections (and, for analyze, requests) written as Parquet tables
// partitioned by hour (package tables, docs/formats.md).
type Tables struct {
	Dir string
	w   *tables.Writer
	rec *tables.Recorder
	// mu serialises the writer between the reading goroutine (packets,
	// connections) and a windowed run's windows (messages, requests).
	mu sync.Mutex
}

// Register adds --parquet to fs.
func (t *Tables) Register(fs *pflag.FlagSet) {
	fs.StringVar(&t.Dir, "parquet", "", "also write the observations, messages, connections and requests as Parquet tables partitioned by hour under `DIR` (absent or empty; docs/formats.md)")
}

// Install starts the tables, if asked for, and hooks them into cfg: every
// packet flows reads becomes observations, every connection a row of
// connections.
func (t *Tables) Install(cfg *pipeline.Config) error {
	if t.Dir == "" {
		return nil
	}
	w, err := tables.Create(t.Dir, tables.Options{})
	if err != nil {
		return cmdutil.UsageErrorf("--parquet: %v", err)
	}
	t.w = w
	t.rec = tables.NewRecorder(w, nil)
	onOpen := cfg.OnOpen
	cfg.OnOpen = func(res *pipeline.Result) {
		t.rec.Sniffers = snifferNames(res.Sniffers)
		if onOpen != nil {
			onOpen(res)
		}
	}
	onPacket := cfg.OnPacket
	cfg.OnPacket = func(p *pcapio.Packet) {
		t.mu.Lock()
		t.rec.Packet(p)
		t.mu.Unlock()
		if onPacket != nil {
			onPacket(p)
		}
	}
	onConn := cfg.Flows.OnConn
	cfg.Flows.OnConn = func(cs *flows.ConnStats) {
		t.mu.Lock()
		t.rec.Conn(cs)
		t.mu.Unlock()
		if onConn != nil {
			onConn(cs)
		}
	}
	return nil
}

// Recorder returns what writes rows to the tables, or nil without
// --parquet. Once the pipeline runs, use it only from the goroutine that
// reads the inputs, or through Do.
func (t *Tables) Recorder() *tables.Recorder { return t.rec }

// Do calls fn with the Recorder while the input's packets and
// connections wait (a windowed run's windows are analysed in a goroutine
// of their own); without --parquet it does nothing.
func (t *Tables) Do(fn func(*tables.Recorder)) {
	if t.rec == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	fn(t.rec)
}

// Finish puts the tables in place when err is nil (returning the first
// error writing them) and removes them otherwise.
func (t *Tables) Finish(ios *cmdutil.IOStreams, err error) error {
	if t.w == nil {
		return err
	}
	w := t.w
	t.w = nil
	if err != nil {
		w.Abort()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	r := w.Rows()
	ios.Infof("parquet tables written to %s: %d observations, %d messages, %d connections, %d requests", t.Dir,
		r[tables.TableObservations], r[tables.TableMessages], r[tables.TableConnections], r[tables.TableRequests])
	return nil
}

func snifferNames(sn []pcapio.Sniffer) []string {
	names := make([]string, len(sn))
	for i, s := range sn {
		names[i] = s.Name
	}
	return names
}
