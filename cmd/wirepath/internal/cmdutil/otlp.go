package cmdutil

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/wirepath/wirepath/causal"
	"github.com/wirepath/wirepath/report"
	"github.com/wirepath/wirepath/trace"
)

// OTLPEndpointFlag registers --otlp-endpoint, which sends the OTLP export
// of the results to an OTLP/HTTP receiver besides writing the report.
func OTLPEndpointFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "otlp-endpoint", "", "also send the OTLP export (every request, with its calls as spans) to the OTLP/HTTP receiver at `URL` (http://localhost:4318; /v1/traces is added when the URL has no path)")
}

// TracesURL returns the URL an OTLP/HTTP export of traces goes to: the
// endpoint as given when it has a path, else with /v1/traces added, as
// OpenTelemetry's OTEL_EXPORTER_OTLP_ENDPOINT is read.
func TracesURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", UsageErrorf("--otlp-endpoint %q is not an http:// or https:// URL", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// OTLPTimeout bounds one export request.
const OTLPTimeout = 30 * time.Second

// SendOTLP posts body, an OTLP/JSON ExportTraceServiceRequest, to the
// receiver at endpoint. A status other than 2xx is an error that quotes
// the start of the receiver's answer; a 2xx answer that reports rejected
// spans (partialSuccess) is returned as a warning.
func SendOTLP(ctx context.Context, endpoint string, body []byte) (warning string, err error) {
	u, err := TracesURL(endpoint)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, OTLPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("sending the OTLP export: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("sending the OTLP export to %s: %s: %s", u, resp.Status, strings.TrimSpace(string(answer)))
	}
	if bytes.Contains(answer, []byte("rejectedSpans")) {
		return fmt.Sprintf("the OTLP receiver at %s rejected spans: %s", u, strings.TrimSpace(string(answer))), nil
	}
	return "", nil
}

// ExportOTLP renders the results' OTLP export (with the trace for listed
// instances' times) and sends it to endpoint, saying so on stderr.
func ExportOTLP(ctx context.Context, ios *IOStreams, endpoint string, rs []*causal.Result, tr *trace.Trace) error {
	var buf bytes.Buffer
	if err := report.WriteAll(&buf, report.FormatOTLP, rs, report.Options{Trace: tr}); err != nil {
		return err
	}
	w, err := SendOTLP(ctx, endpoint, buf.Bytes())
	if err != nil {
		return err
	}
	if w != "" {
		ios.Warnf("%s", w)
	}
	ios.Infof("OTLP export (%d bytes) sent to %s", buf.Len(), endpoint)
	return nil
}
