package report

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// browser is a headless Chromium driven over the DevTools protocol on the
// pipe Chromium opens with --remote-debugging-pipe (file descriptors 3 and
// 4, messages separated by NUL bytes), so the test needs no websocket
// library and no network port.
type browser struct {
	cmd     *exec.Cmd
	w       *os.File
	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpMsg
	events  chan cdpMsg
	stderr  bytes.Buffer
	done    chan struct{}
}

type cdpMsg struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// chromiumPath finds the browser, or skips the test when there is none
// (make deps installs Debian's chromium).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed (make deps installs it); skipping the browser test")
	return ""
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath(t)
	// Chromium reads commands from fd 3 and writes replies to fd 4.
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{w: cmdW, pending: map[int]chan cdpMsg{}, events: make(chan cdpMsg, 1024), done: make(chan struct{})}
	b.cmd = exec.Command(path,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
		"--disable-extensions", "--mute-audio", "--hide-scrollbars", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	b.cmd.ExtraFiles = []*os.File{cmdR, respW}
	b.cmd.Stderr = &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	respW.Close()
	go b.readLoop(respR)
	t.Cleanup(func() {
		b.w.Close()
		done := make(chan struct{})
		go func() { b.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			b.cmd.Process.Kill()
			<-done
		}
	})
	return b
}

func (b *browser) readLoop(r *os.File) {
	defer close(b.done)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		raw, err := br.ReadBytes(0)
		if err != nil {
			return
		}
		var m cdpMsg
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		if m.ID != 0 {
			b.mu.Lock()
			ch := b.pending[m.ID]
			delete(b.pending, m.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		select {
		case b.events <- m:
		default: // drop events nobody reads rather than block
		}
	}
}

// call sends one command and waits for its reply.
func (b *browser) call(ctx context.Context, session, method string, params any, result any) error {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMsg, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := b.w.Write(append(raw, 0)); err != nil {
		return fmt.Errorf("%s: %w (chromium stderr: %s)", method, err, b.stderr.String())
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-b.done:
		return fmt.Errorf("%s: chromium exited (stderr: %s)", method, b.stderr.String())
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// page is one tab attached in flat session mode.
type page struct {
	b       *browser
	session string
	// problems are console errors, uncaught exceptions, log errors and
	// network requests that left the page.
	problems []string
	loaded   bool
}

func (b *browser) newPage(ctx context.Context, width, height int) (*page, error) {
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return nil, err
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return nil, err
	}
	p := &page{b: b, session: att.SessionID}
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable", "Network.enable"} {
		if err := b.call(ctx, p.session, m, nil, nil); err != nil {
			return nil, err
		}
	}
	err := b.call(ctx, p.session, "Emulation.setDeviceMetricsOverride",
		map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	return p, err
}

// drain handles the events that arrived so far.
func (p *page) drain() {
	for {
		select {
		case m := <-p.b.events:
			p.event(m)
		default:
			return
		}
	}
}

func (p *page) event(m cdpMsg) {
	if m.SessionID != p.session {
		return
	}
	switch m.Method {
	case "Page.loadEventFired":
		p.loaded = true
	case "Runtime.exceptionThrown":
		var e struct {
			ExceptionDetails struct {
				Text      string `json:"text"`
				Exception struct {
					Description string `json:"description"`
				} `json:"exception"`
			} `json:"exceptionDetails"`
		}
		json.Unmarshal(m.Params, &e)
		p.problems = append(p.problems, "exception: "+e.ExceptionDetails.Text+" "+e.ExceptionDetails.Exception.Description)
	case "Runtime.consoleAPICalled":
		var e struct {
			Type string `json:"type"`
			Args []struct {
				Value any `json:"value"`
			} `json:"args"`
		}
		json.Unmarshal(m.Params, &e)
		if e.Type == "error" || e.Type == "warning" || e.Type == "assert" {
			p.problems = append(p.problems, fmt.Sprintf("console.%s: %v", e.Type, e.Args))
		}
	case "Log.entryAdded":
		var e struct {
			Entry struct {
				Level, Text, URL string
			} `json:"entry"`
		}
		json.Unmarshal(m.Params, &e)
		if e.Entry.Level == "error" || e.Entry.Level == "warning" {
			p.problems = append(p.problems, fmt.Sprintf("log %s: %s %s", e.Entry.Level, e.Entry.Text, e.Entry.URL))
		}
	case "Network.requestWillBeSent":
		var e struct {
			Request struct{ URL string } `json:"request"`
		}
		json.Unmarshal(m.Params, &e)
		if u := e.Request.URL; !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") && u != "about:blank" {
			p.problems = append(p.problems, "network request: "+u)
		}
	}
}

// navigate loads url and waits for the load event.
func (p *page) navigate(ctx context.Context, url string) error {
	p.loaded = false
	if err := p.b.call(ctx, p.session, "Page.navigate", map[string]any{"url": url}, nil); err != nil {
		return err
	}
	for !p.loaded {
		select {
		case m := <-p.b.events:
			p.event(m)
		case <-p.b.done:
			return errors.New("chromium exited")
		case <-ctx.Done():
			return fmt.Errorf("waiting for the load event: %w", ctx.Err())
		}
	}
	return nil
}

// eval evaluates a JavaScript expression and unmarshals its JSON value.
func (p *page) eval(ctx context.Context, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := p.b.call(ctx, p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return err
	}
	p.drain()
	if r.ExceptionDetails != nil {
		return fmt.Errorf("evaluating %q: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.Result.Value, out)
}

// screenshot captures the whole page as PNG.
func (p *page) screenshot(ctx context.Context) ([]byte, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := p.b.call(ctx, p.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &r); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(r.Data)
}

// openPage starts the browser and opens the file at path in a 1280×1000
// page; the context, which the caller cancels, bounds the whole test.
func openPage(t *testing.T, path string, limit time.Duration) (context.Context, context.CancelFunc, *page) {
	t.Helper()
	b := startBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	pg, err := b.newPage(ctx, 1280, 1000)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := pg.navigate(ctx, "file://"+path); err != nil {
		cancel()
		t.Fatal(err)
	}
	return ctx, cancel, pg
}
