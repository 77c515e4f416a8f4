package report

import (
	"strconv"
	"strings"

	"github.com/wirepath/wirepath/trace"
)

// The OpenTelemetry semantic conventions (v1.26 and later) the OTLP
// export sets from what the protocol decoders put in a message's label
// (docs/protocols.md): "GET /item/{id}",
// "grpc /pkg.Service/Method", "redis GET", "memcache get", "SELECT users",
// "dns A example.com", "kafka Produce"; a response's label "200" is an
// HTTP status.

// httpMethods are the request methods an HTTP label starts with.
var httpMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "CONNECT": true,
	"OPTIONS": true, "TRACE": true, "PATCH": true,
}

// sqlVerbs are the statements an SQL label may start with.
var sqlVerbs = map[string]bool{
	"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true, "CREATE": true, "DROP": true,
	"ALTER": true, "TRUNCATE": true, "BEGIN": true, "COMMIT": true, "ROLLBACK": true, "SET": true,
	"SHOW": true, "CALL": true, "EXECUTE": true, "PREPARE": true, "MERGE": true, "REPLACE": true,
	"COPY": true, "GRANT": true, "REVOKE": true, "EXPLAIN": true, "USE": true,
}

// sqlSystems names the database system of a well-known server port, for
// SQL labels (which do not say which database they went to).
var sqlSystems = map[int]string{5432: "postgresql", 3306: "mysql"}

// labelAttrs returns the semantic-convention attributes the label of the
// call's request message gives.
func labelAttrs(c *reqMsg) []otlpKV {
	l := c.Label
	word, rest, _ := strings.Cut(l, " ")
	switch {
	case l == "":
		return nil
	case httpMethods[word] && strings.HasPrefix(rest, "/"):
		return []otlpKV{kvS("http.request.method", word), kvS("http.route", rest), kvS("url.template", rest)}
	case word == "grpc" && strings.HasPrefix(rest, "/"):
		svc, method, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
		return []otlpKV{kvS("rpc.system", "grpc"), kvS("rpc.service", svc), kvS("rpc.method", method)}
	case word == "redis" || word == "memcache":
		sys := map[string]string{"redis": "redis", "memcache": "memcached"}[word]
		return []otlpKV{kvS("db.system", sys), kvS("db.system.name", sys), kvS("db.operation.name", rest)}
	case word == "kafka":
		return []otlpKV{kvS("messaging.system", "kafka"), kvS("messaging.operation.name", rest)}
	case word == "dns":
		typ, name, _ := strings.Cut(rest, " ")
		a := []otlpKV{kvS("dns.question.type", typ)}
		if name != "" {
			a = append(a, kvS("dns.question.name", name))
		}
		return a
	case sqlVerbs[strings.ToUpper(word)]:
		sys := "other_sql"
		if _, port, ok := splitHostPort(c.Dst); ok && sqlSystems[port] != "" {
			sys = sqlSystems[port]
		}
		a := []otlpKV{kvS("db.system", sys), kvS("db.system.name", sys), kvS("db.operation.name", strings.ToUpper(word))}
		if rest != "" && !strings.Contains(rest, " ") {
			a = append(a, kvS("db.collection.name", rest))
		}
		return a
	}
	return nil
}

// httpStatus returns the HTTP status a response's label gives ("200").
func httpStatus(r *reqMsg) (int, bool) {
	if r == nil || len(r.Label) != 3 {
		return 0, false
	}
	n, err := strconv.Atoi(r.Label)
	if err != nil || n < 100 || n > 599 {
		return 0, false
	}
	return n, true
}

// splitHostPort splits an endpoint "10.0.0.1:80" or "[fe80::1]:53" into
// its host and port; port is -1 for an endpoint without a numeric port
// ("10.0.0.1:*", "unix:/run/app.sock" has none and is not an address).
func splitHostPort(ep string) (host string, port int, ok bool) {
	if ep == "" || strings.HasPrefix(ep, "unix:") {
		return "", 0, false
	}
	if h, ok := strings.CutSuffix(ep, ":*"); ok {
		return strings.Trim(h, "[]"), -1, h != ""
	}
	h, p := trace.SplitEndpoint(ep)
	if h == "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 0 || n > 65535 {
		return h, -1, true
	}
	return h, n, true
}
