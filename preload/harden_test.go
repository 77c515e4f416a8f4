package preload

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// libEnv returns the environment for a program run under lib: the test's
// own without the library's variables and those named in kv, then kv.
// An entry of kv without "=" only removes the variable.
func libEnv(lib string, kv ...string) []string {
	drop := map[string]bool{}
	for _, e := range kv {
		k, _, _ := strings.Cut(e, "=")
		drop[k] = true
	}
	var env []string
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		if drop[k] || strings.HasPrefix(k, "WIREPATH_PRELOAD_") || k == "LD_PRELOAD" {
			continue
		}
		env = append(env, e)
	}
	env = append(env, "LD_PRELOAD="+lib)
	for _, e := range kv {
		if strings.Contains(e, "=") {
			env = append(env, e)
		}
	}
	return env
}

// runEnv runs a program with env and returns its stdout as lines of fields
// and its stderr.
func runEnv(t *testing.T, env []string, name string, args ...string) ([][]string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, stderr.Bytes())
	}
	var lines [][]string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines = append(lines, f)
		}
	}
	return lines, stderr.String()
}

// traceFiles returns the trace files in dir.
func traceFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// endRecords counts the "end" records in the traces in dir.
func endRecords(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	for _, p := range traceFiles(t, dir) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n += bytes.Count(data, []byte(`"call":"end"`))
	}
	return n
}

// unixBytes sums what the process's UNIX stream sockets sent and received.
func unixBytes(tab *Table) (sent, recv int64) {
	for _, c := range tab.Conns {
		if c.Sock == SockUnixStream {
			sent += c.SentBytes
			recv += c.RecvBytes
		}
	}
	return sent, recv
}

// TestLibraryHardening runs programs that make libwpcap's own log, its
// record sizes and its directory meet what applications and other users
// do: descriptors closed behind its back and reused, very long names,
// directories made by someone else, splice.
func TestLibraryHardening(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs programs")
	}
	dir := t.TempDir()
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d // the exe path the kernel reports is the resolved one
	}
	lib := buildLib(t, dir)
	progs := map[string]string{}
	binDir := filepath.Join(dir, "bin")
	os.Mkdir(binDir, 0o755)
	for _, p := range []string{"fdreuse", "splicex", "threads"} {
		progs[p] = buildProg(t, binDir, p)
	}
	t.Run("fd-reuse", func(t *testing.T) { testFDReuse(t, dir, lib, progs["fdreuse"]) })
	t.Run("long-exe-path", func(t *testing.T) { testLongExe(t, dir, lib, progs["threads"]) })
	t.Run("long-host", func(t *testing.T) { testLongHost(t, dir, lib, progs["threads"]) })
	t.Run("uts-host", func(t *testing.T) { testUTSHost(t, dir, lib, progs["threads"]) })
	t.Run("directory", func(t *testing.T) { testTraceDir(t, dir, lib, progs["threads"]) })
	t.Run("splice", func(t *testing.T) { testSplice(t, dir, lib, progs["splicex"]) })
}

// testFDReuse: an application closes every descriptor (closefrom, the
// close_range function, the close_range system call) and opens a file or
// connects a socket that gets the library's old descriptor number. The
// file and the peer must receive only the application's data, and the
// trace must stay whole.
func testFDReuse(t *testing.T, dir, lib, prog string) {
	const n = 3000 // messages per exchange: several buffers of records
	appData := "application data 0\napplication data 1\napplication data 2\n"
	for _, how := range []string{"closefrom", "close_range", "syscall"} {
		for _, target := range []string{"file", "tcp"} {
			t.Run(how+"-"+target, func(t *testing.T) {
				logs := filepath.Join(dir, "fd-"+how+"-"+target)
				if err := os.Mkdir(logs, 0o700); err != nil {
					t.Fatal(err)
				}
				env := libEnv(lib, "WIREPATH_PRELOAD_DIR="+logs, "WIREPATH_PRELOAD_HOST=testhost")
				var arg string
				var got chan []byte
				if target == "file" {
					arg = filepath.Join(dir, how+".data")
				} else {
					ln, err := net.Listen("tcp4", "127.0.0.1:0")
					if err != nil {
						t.Fatal(err)
					}
					defer ln.Close()
					arg = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
					got = make(chan []byte, 1)
					go func() {
						c, err := ln.Accept()
						if err != nil {
							got <- nil
							return
						}
						defer c.Close()
						c.SetReadDeadline(time.Now().Add(60 * time.Second))
						b, _ := io.ReadAll(c)
						got <- b
					}()
				}
				lines, _ := runEnv(t, env, prog, how, target, arg, strconv.Itoa(n))
				if len(lines) > 0 && lines[0][0] == "skip" {
					t.Skipf("fdreuse: %s", strings.Join(lines[0][1:], " "))
				}
				if fd := field(t, lines, "target_fd", 1); fd != 900 {
					t.Fatalf("the target got descriptor %d, not the library's 900: the test does not test", fd)
				}
				var data []byte
				if target == "file" {
					var err error
					if data, err = os.ReadFile(arg); err != nil {
						t.Fatal(err)
					}
				} else {
					data = <-got
				}
				if string(data) != appData {
					t.Errorf("the application's %s received %d bytes (%d lines), want only its own %d:\n%.300s",
						target, len(data), bytes.Count(data, []byte("\n")), len(appData), data)
				}
				tab := loadDir(t, logs) // strict: every line whole
				want := field(t, lines, "pair_bytes", 1)
				if s, r := unixBytes(tab); s != want || r != want {
					t.Errorf("trace: %d bytes sent and %d received on socketpairs, the program moved %d", s, r, want)
				}
				if e := endRecords(t, logs); e != 1 {
					t.Errorf("%d end records, want 1", e)
				}
				if n := tab.Counters.LogReopens; n != 1 {
					t.Errorf("the end record says the log was reopened %d times, want 1", n)
				}
				if target == "tcp" {
					c := one(t, "the application's connection", conns(tab, func(c *Conn) bool { return c.Remote == "127.0.0.1:"+arg }))
					if c.SentBytes != int64(len(appData)) || c.FD != 900 {
						t.Errorf("the application's connection: %+v", *c)
					}
				}
			})
		}
	}
}

// testLongExe runs a program from a directory path of about 2,000
// characters with quotes, backslashes and control characters in it, by
// an exec from a traced shell: the header's exe and the exec record's
// path are far longer than any fixed line buffer.
func testLongExe(t *testing.T, dir, lib, prog string) {
	p := filepath.Join(dir, "long")
	for i := 0; i < 14; i++ {
		p = filepath.Join(p, fmt.Sprintf("%02d%s\"q\\b\x01\n", i, strings.Repeat("x", 130)))
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(p, "threads")
	bin, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if len(exe) < 1900 {
		t.Fatalf("path of %d bytes", len(exe))
	}
	logs := filepath.Join(dir, "long-exe")
	os.Mkdir(logs, 0o700)
	env := libEnv(lib, "WIREPATH_PRELOAD_DIR="+logs, "WIREPATH_PRELOAD_HOST=testhost")
	lines, _ := runEnv(t, env, "sh", "-c", `exec "$0" 2 50`, exe)
	tab := loadDir(t, logs) // strict: a cut or glued line fails here
	var main, shell *Process
	for _, pr := range tab.Processes() {
		if pr.PID == 0 {
			t.Errorf("a process with pid 0: %+v", pr)
		}
		if pr.Name == "threads" && len(pr.Children) == 1 {
			main = pr
		}
		if len(pr.Execs) == 1 {
			shell = pr
		}
	}
	if main == nil || main.Exe != exe {
		t.Fatalf("no process with the long exe; processes: %+v", tab.Processes())
	}
	if shell == nil || shell.Execs[0] != exe {
		t.Errorf("the shell's exec: %+v", shell)
	}
	var sent int64
	for _, c := range main.Conns {
		sent += c.SentBytes
	}
	if want := field(t, lines, "bytes", 1); sent != want {
		t.Errorf("sent %d bytes, the program says %d", sent, want)
	}
}

// testLongHost: a host name far longer than a file name may be.
func testLongHost(t *testing.T, dir, lib, prog string) {
	host := strings.Repeat("h", 240) + "/\"x\\"
	logs := filepath.Join(dir, "long-host")
	os.Mkdir(logs, 0o700)
	env := libEnv(lib, "WIREPATH_PRELOAD_DIR="+logs, "WIREPATH_PRELOAD_HOST="+host)
	lines, _ := runEnv(t, env, prog, "1", "20")
	tab := loadDir(t, logs)
	ps := tab.Processes()
	if len(ps) != 2 || ps[0].Host != host || ps[1].Host != host {
		t.Fatalf("processes %+v, want two on host %q", ps, host)
	}
	if s, _ := unixBytes(tab); s != field(t, lines, "bytes", 1)+5 { // the forked child's 5
		t.Errorf("sent %d", s)
	}
}

// testUTSHost: the host name from gethostname at its longest (64 bytes,
// set in a UTS namespace of its own).
func testUTSHost(t *testing.T, dir, lib, prog string) {
	host := strings.Repeat("u", 64)
	if out, err := exec.Command("unshare", "-u", "hostname", host).CombinedOutput(); err != nil {
		t.Skipf("unshare -u: %v %s", err, out)
	}
	logs := filepath.Join(dir, "uts-host")
	os.Mkdir(logs, 0o700)
	env := libEnv(lib, "WIREPATH_PRELOAD_DIR="+logs)
	runEnv(t, env, "unshare", "-u", "sh", "-c", `hostname "$0" && exec "$1" 1 20`, host, prog)
	tab := loadDir(t, logs)
	n := 0
	for _, p := range tab.Processes() {
		if p.Name == "threads" {
			n++
			if p.Host != host {
				t.Errorf("process %d on host %q, want %q", p.PID, p.Host, host)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d threads processes: %+v", n, tab.Processes())
	}
}

// testTraceDir checks where the traces go by default, with which modes,
// and that a directory another user made or a planted symlink is refused.
func testTraceDir(t *testing.T, dir, lib, prog string) {
	root := os.Geteuid() == 0
	nobody := 65534
	cases := []struct {
		name     string
		rootOnly bool
		// setup prepares base and returns the environment entries.
		setup func(t *testing.T, base string) []string
		want  string   // where the traces must be, relative to base ("" if refused)
		empty []string // directories that must hold no trace
	}{
		{"xdg-runtime", false, func(t *testing.T, base string) []string {
			mkdirs(t, 0o700, base+"/run", base+"/home")
			return []string{"XDG_RUNTIME_DIR=" + base + "/run", "HOME=" + base + "/home", "XDG_CACHE_HOME"}
		}, "run/wirepath-preload", nil},
		{"home-cache", false, func(t *testing.T, base string) []string {
			mkdirs(t, 0o700, base+"/home")
			return []string{"XDG_RUNTIME_DIR", "HOME=" + base + "/home", "XDG_CACHE_HOME"}
		}, "home/.cache/wirepath-preload", nil},
		{"xdg-cache-home", false, func(t *testing.T, base string) []string {
			mkdirs(t, 0o700, base+"/home", base+"/cache")
			return []string{"XDG_RUNTIME_DIR", "HOME=" + base + "/home", "XDG_CACHE_HOME=" + base + "/cache"}
		}, "cache/wirepath-preload", nil},
		{"default-made-by-another-user", true, func(t *testing.T, base string) []string {
			mkdirs(t, 0o700, base+"/run")
			mkdirs(t, 0o777, base+"/run/wirepath-preload")
			chown(t, base+"/run/wirepath-preload", nobody)
			return []string{"XDG_RUNTIME_DIR=" + base + "/run"}
		}, "", []string{"run/wirepath-preload"}},
		{"explicit-made-by-another-user", true, func(t *testing.T, base string) []string {
			mkdirs(t, 0o777, base+"/shared")
			chown(t, base+"/shared", nobody)
			return []string{"WIREPATH_PRELOAD_DIR=" + base + "/shared"}
		}, "", []string{"shared"}},
		{"default-planted-symlink", false, func(t *testing.T, base string) []string {
			mkdirs(t, 0o700, base+"/run", base+"/elsewhere")
			symlink(t, base+"/elsewhere", base+"/run/wirepath-preload")
			return []string{"XDG_RUNTIME_DIR=" + base + "/run"}
		}, "", []string{"elsewhere"}},
		{"explicit-planted-symlink", false, func(t *testing.T, base string) []string {
			mkdirs(t, 0o700, base+"/elsewhere")
			symlink(t, base+"/elsewhere", base+"/traces")
			return []string{"WIREPATH_PRELOAD_DIR=" + base + "/traces"}
		}, "", []string{"elsewhere"}},
		{"explicit-planted-symlink-slash", false, func(t *testing.T, base string) []string {
			mkdirs(t, 0o700, base+"/elsewhere")
			symlink(t, base+"/elsewhere", base+"/traces")
			return []string{"WIREPATH_PRELOAD_DIR=" + base + "/traces/"}
		}, "", []string{"elsewhere"}},
		{"explicit-created", false, func(t *testing.T, base string) []string {
			return []string{"WIREPATH_PRELOAD_DIR=" + base + "/new"}
		}, "new", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.rootOnly && !root {
				t.Skip("needs root to make a directory another user owns")
			}
			base := filepath.Join(dir, "dir-"+tc.name)
			mkdirs(t, 0o755, base)
			kv := append(tc.setup(t, base), "WIREPATH_PRELOAD_HOST=testhost")
			if !strings.Contains(strings.Join(kv, "\n"), "WIREPATH_PRELOAD_DIR=") {
				kv = append(kv, "WIREPATH_PRELOAD_DIR")
			}
			lines, stderr := runEnv(t, libEnv(lib, kv...), prog, "1", "20")
			if field(t, lines, "bytes", 1) != 210 {
				t.Errorf("the program's output changed: %q", lines)
			}
			for _, e := range tc.empty {
				if m := traceFiles(t, filepath.Join(base, e)); len(m) != 0 {
					t.Errorf("traces written into %s: %q", e, m)
				}
			}
			if tc.want == "" {
				if !strings.Contains(stderr, "libwpcap") {
					t.Errorf("refused silently; stderr %q", stderr)
				}
				return
			}
			want := filepath.Join(base, tc.want)
			st, err := os.Lstat(want)
			if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
				t.Fatalf("%s: %v %v, want a directory of mode 0700", want, st, err)
			}
			files := traceFiles(t, want)
			if len(files) != 2 { // the program and its forked child
				t.Fatalf("%d traces in %s, want 2", len(files), want)
			}
			for _, f := range files {
				if st, err := os.Stat(f); err != nil || st.Mode().Perm() != 0o600 {
					t.Errorf("%s: mode %v (%v), want 0600", f, st.Mode(), err)
				}
			}
			loadDir(t, want)
		})
	}
}

func mkdirs(t *testing.T, mode os.FileMode, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
}

func chown(t *testing.T, path string, uid int) {
	t.Helper()
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// testSplice moves data both ways over a TCP connection with splice (and
// vmsplice into the pipes): the trace must count every byte.
func testSplice(t *testing.T, dir, lib, prog string) {
	logs := filepath.Join(dir, "splice")
	os.Mkdir(logs, 0o700)
	env := libEnv(lib, "WIREPATH_PRELOAD_DIR="+logs, "WIREPATH_PRELOAD_HOST=testhost")
	lines, _ := runEnv(t, env, prog, "100000")
	tab := loadDir(t, logs)
	moved := field(t, lines, "moved", 1)
	cli := fmt.Sprintf("127.0.0.1:%d", field(t, lines, "client_port", 1))
	c := one(t, "client", conns(tab, func(c *Conn) bool { return c.Local == cli }))
	s := one(t, "server", conns(tab, func(c *Conn) bool { return c.Remote == cli }))
	if c.SentBytes != moved || c.RecvBytes != moved || s.SentBytes != moved || s.RecvBytes != moved {
		t.Errorf("client sent %d received %d, server sent %d received %d; each should be %d",
			c.SentBytes, c.RecvBytes, s.SentBytes, s.RecvBytes, moved)
	}
	for _, cn := range []*Conn{c, s} {
		for _, m := range cn.Msgs {
			if (m.Dir == DirSend) != (m.Call == CallSpliceSend) || (m.Dir == DirRecv) != (m.Call == CallSpliceRecv) {
				t.Errorf("%s message by %v", m.Dir, m.Call)
			}
		}
	}
}
