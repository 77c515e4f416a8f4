package evidence

import "testing"

// deniedRef is denied as it was written first: every word searched for
// at every position of name.
func deniedRef(name []byte) bool {
	for _, w := range deniedWords {
		if indexFold(name, w) >= 0 {
			return true
		}
	}
	return hasPrefixFold(name, "sec-websocket-")
}

// jsonStringRef is jsonString as it was written first, a byte at a time.
func jsonStringRef(p []byte, i int) (int, bool) {
	j := i + 1
	for j < len(p) && p[j] != '"' {
		if p[j] == '\\' {
			j++
		}
		j++
	}
	if j >= len(p) {
		return -1, false
	}
	k := j + 1
	for k < len(p) && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r' || p[k] == '\n') {
		k++
	}
	return j, k < len(p) && p[k] != ':'
}

var deniedCases = []string{
	"Authorization", "X-Api-KEY", "cookie", "Set-Cookie", "x-csrf-token", "Content-Type",
	"ETag", "If-None-Match", "if-match", "Content-MD5", "x-sha256-sum", "X-SHA1", "user-agent",
	"Sec-WebSocket-Accept", "x-sec-websocket-x", "x-request-id", "traceparent", "PASSWORD",
	"k", "ke", "monkey", "a", "", "x-session", "signatures", "digest", "X-Amz-Content-Sha512",
}

func TestDeniedAsBefore(t *testing.T) {
	for _, c := range deniedCases {
		if got, want := denied([]byte(c)), deniedRef([]byte(c)); got != want {
			t.Errorf("denied(%q) = %v, want %v", c, got, want)
		}
	}
}

var jsonStringCases = []string{
	`"abc"`, `"abc":1`, `"a\"b" , x`, `"a\\"`, `"a\\\"b"` + "\n" + `:`, `"unclosed`, `"ends in \`,
	`"\"`, `""`, `"" `, `"x"` + "\t\r\n", `"` + string(make([]byte, 300)) + `\"y"z`,
}

func TestJSONStringAsBefore(t *testing.T) {
	for _, c := range jsonStringCases {
		checkJSONString(t, []byte(c))
	}
}

// checkJSONString holds jsonString to jsonStringRef at every quote of p.
func checkJSONString(t *testing.T, p []byte) {
	t.Helper()
	for i, c := range p {
		if c != '"' {
			continue
		}
		j, v := jsonString(p, i)
		rj, rv := jsonStringRef(p, i)
		if j != rj || v != rv {
			t.Fatalf("jsonString(%q, %d) = %d, %v, want %d, %v", p, i, j, v, rj, rv)
		}
	}
}

func FuzzScansAsBefore(f *testing.F) {
	for _, c := range deniedCases {
		f.Add([]byte(c))
	}
	for _, c := range jsonStringCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if got, want := denied(p), deniedRef(p); got != want {
			t.Fatalf("denied(%q) = %v, want %v", p, got, want)
		}
		checkJSONString(t, p)
	})
}
