// Package realserver starts real servers (Redis, memcached, PostgreSQL,
// MariaDB, nginx) on loopback in a test's temporary directory, as the
// test's own child processes, runs real clients, and records loopback
// traffic with tcpdump, so that the pipeline is tested on what real
// programs send. A test whose program is missing (or that needs root and
// has none) is skipped.
package realserver

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to accept connections: a
// guard against a server that never comes up, not a timing check. Under
// make test's parallel packages on two shared cores a cold PostgreSQL once
// took more than a minute.
const startTimeout = 3 * time.Minute

// LookPath finds the first of names in PATH or in dirs, or skips t.
func LookPath(t testing.TB, names []string, dirs ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
		for _, d := range dirs {
			matches, _ := filepath.Glob(filepath.Join(d, n))
			if len(matches) > 0 {
				return matches[len(matches)-1]
			}
		}
	}
	t.Skipf("%s not installed (make deps installs it)", names[0])
	return ""
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Server is a server process started by a test.
type Server struct {
	Addr string // host:port on loopback
	Dir  string // its temporary directory
	cmd  *exec.Cmd
	log  *bytes.Buffer
}

// start runs argv as a child of the test (as user, when not empty and
// running as root) and waits until addr accepts connections. The process
// is killed when the test ends.
func start(t testing.TB, addr, dir, user string, argv ...string) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if user != "" && os.Getuid() == 0 {
		cmd = exec.CommandContext(ctx, "setpriv", append(setpriv(t, user), argv...)...)
	}
	cmd.Dir = dir
	log := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 5 * time.Second
	// The server's own process group, killed whole at the end: a master
	// killed alone leaves its workers running (nginx's did, one per run).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start %s: %v", argv[0], err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	deadline := time.Now().Add(startTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return &Server{Addr: addr, Dir: dir, cmd: cmd, log: log}
		}
		select {
		case <-done:
			t.Fatalf("%s exited: %s", argv[0], log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s: %s", argv[0], addr, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runAs runs a setup command (as user when root) and fails t on error.
func runAs(t testing.TB, dir, user string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if user != "" && os.Getuid() == 0 {
		cmd = exec.Command("setpriv", append(setpriv(t, user), argv...)...)
	}
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
}

// userDir returns a temporary directory the unprivileged user owns.
func userDir(t testing.TB, user string) string {
	t.Helper()
	dir := t.TempDir()
	if os.Getuid() != 0 {
		return dir
	}
	// The test's temporary directory's parents are the test's: open
	// them for the server user to enter, and give it the directory.
	for p := dir; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		_ = os.Chmod(p, 0o755)
	}
	uid, gid := ids(t, user)
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ids returns a user's uid and primary gid, or skips t.
func ids(t testing.TB, name string) (int, int) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Skipf("no user %s to run servers as: %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid
}

// setpriv returns the arguments of setpriv(1) that run a command as user.
func setpriv(t testing.TB, user string) []string {
	LookPath(t, []string{"setpriv"})
	uid, gid := ids(t, user)
	return []string{"--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(gid), "--clear-groups", "--"}
}

// unprivileged is the user servers run as when the test runs as root.
const unprivileged = "nobody"

// Redis starts redis-server on a free loopback port without persistence.
func Redis(t testing.TB) *Server {
	bin := LookPath(t, []string{"redis-server"})
	dir := t.TempDir()
	port := FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	return start(t, addr, dir, "", bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "no")
}

// Memcached starts memcached on a free loopback port (TCP only).
func Memcached(t testing.TB) *Server {
	bin := LookPath(t, []string{"memcached"})
	port := FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	argv := []string{bin, "-p", strconv.Itoa(port), "-l", "127.0.0.1", "-U", "0", "-m", "16"}
	if os.Getuid() == 0 {
		argv = append(argv, "-u", unprivileged)
	}
	return start(t, addr, t.TempDir(), "", argv...)
}

// Postgres initialises a cluster with trust authentication (user
// "postgres") and starts it on a free loopback port, as an unprivileged
// user when the test runs as root.
func Postgres(t testing.TB) *Server {
	initdb := LookPath(t, []string{"initdb"}, "/usr/lib/postgresql/*/bin")
	postgres := LookPath(t, []string{"postgres"}, "/usr/lib/postgresql/*/bin")
	user := ""
	if os.Getuid() == 0 {
		user = unprivileged
	}
	dir := userDir(t, unprivileged)
	data := filepath.Join(dir, "data")
	runAs(t, dir, user, initdb, "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
	port := FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	srv := start(t, addr, dir, user, postgres, "-D", data, "-k", dir, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "shared_buffers=16MB", "-c", "max_connections=20")
	waitPostgres(t, srv)
	return srv
}

// waitPostgres waits until the server accepts a start-up packet: it listens
// before it is ready, and answers "the database system is starting up"
// until then.
func waitPostgres(t testing.TB, srv *Server) {
	t.Helper()
	addr := srv.Addr
	startup := []byte("\x00\x00\x00\x29\x00\x03\x00\x00user\x00postgres\x00database\x00postgres\x00\x00")
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.SetDeadline(time.Now().Add(5 * time.Second))
			var b [1]byte
			_, err = c.Write(startup)
			if err == nil {
				_, err = c.Read(b[:])
			}
			c.Close()
			if err == nil && b[0] == 'R' {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("PostgreSQL on %s did not become ready within %v", addr, startTimeout)
}

// MariaDB installs a data directory and starts mariadbd on a free loopback
// port with grant tables skipped (any user, no password).
func MariaDB(t testing.TB) *Server {
	install := LookPath(t, []string{"mariadb-install-db", "mysql_install_db"})
	mariadbd := LookPath(t, []string{"mariadbd", "mysqld"}, "/usr/sbin")
	user := ""
	if os.Getuid() == 0 {
		user = unprivileged
	}
	dir := userDir(t, unprivileged)
	data := filepath.Join(dir, "data")
	args := []string{install, "--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if user != "" {
		args = append(args, "--user="+user)
	}
	runAs(t, dir, "", args...)
	port := FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	argv := []string{mariadbd, "--no-defaults", "--datadir=" + data, "--socket=" + filepath.Join(dir, "sock"),
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--skip-grant-tables",
		"--pid-file=" + filepath.Join(dir, "pid"), "--innodb-buffer-pool-size=16M", "--skip-log-bin"}
	if user != "" {
		argv = append(argv, "--user="+user)
	}
	return start(t, addr, dir, "", argv...)
}

// Command runs a client program with stdin and returns its output; it
// fails t on error.
func Command(t testing.TB, stdin []byte, argv ...string) []byte {
	t.Helper()
	out, err := Output(t, stdin, argv...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
	return out
}

// Output runs a client program with stdin (skipping t when it is not
// installed) and returns its combined output and exit error.
func Output(t testing.TB, stdin []byte, argv ...string) ([]byte, error) {
	t.Helper()
	LookPath(t, argv[:1])
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	return cmd.CombinedOutput()
}
