package reconcile_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wirepath/wirepath/preload"
	"github.com/wirepath/wirepath/reconcile"
	"github.com/wirepath/wirepath/trace"
)

// TestThreadsTraced runs a threaded program (preload/testdata/progs/
// threads.c: each of T threads writes N messages on a socketpair of its
// own and reads them back; the main thread forks a child that does it
// once) under the LD_PRELOAD library and under strace, and reconciles each
// syscall trace: every message carries the thread that wrote it and the
// one that read it, the same thread, one per connection, T distinct
// threads of the process (none its main thread) and the child's own.
func TestThreadsTraced(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed (make deps installs it)")
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libwpcap.so")
	prog := filepath.Join(dir, "threads")
	for _, args := range [][]string{
		{"-Wall", "-Wextra", "-O2", "-fPIC", "-shared", "-U_FORTIFY_SOURCE", "-o", lib, "../preload/libwpcap/wpcap.c", "-ldl", "-lpthread"},
		{"-Wall", "-Wextra", "-O2", "-o", prog, "../preload/testdata/progs/threads.c", "-lpthread"},
	} {
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, out)
		}
	}
	const threads, per = "4", "25"
	t.Run("libwpcap", func(t *testing.T) {
		logs := filepath.Join(dir, "logs")
		if err := os.MkdirAll(logs, 0o755); err != nil {
			t.Fatal(err)
		}
		runProg(t, []string{"LD_PRELOAD=" + lib, "WIREPATH_PRELOAD_DIR=" + logs, "WIREPATH_PRELOAD_HOST=h"}, prog, threads, per)
		paths, err := preload.ExpandPaths([]string{logs})
		if err != nil {
			t.Fatal(err)
		}
		tab, err := preload.ReadFiles(preload.Options{Strict: true}, paths...)
		if err != nil {
			t.Fatal(err)
		}
		checkThreads(t, tab, 4, 25)
	})
	t.Run("strace", func(t *testing.T) {
		if _, err := exec.LookPath("strace"); err != nil {
			t.Skip("strace not installed (make deps installs it)")
		}
		out := filepath.Join(dir, "threads.strace")
		ok := runProg(t, nil, "strace", "-f", "-ttt", "-yy", "-o", out, prog, threads, per)
		if !ok {
			t.Skip("strace cannot trace here (no ptrace)")
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var conv bytes.Buffer
		if _, err := preload.ConvertStrace(f, out, preload.NewWriter(&conv), preload.StraceOptions{Host: "h", Strict: true}); err != nil {
			t.Fatal(err)
		}
		converted := filepath.Join(dir, "threads.jsonl")
		if err := os.WriteFile(converted, conv.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		tab, err := preload.ReadFiles(preload.Options{Strict: true}, converted)
		if err != nil {
			t.Fatal(err)
		}
		checkThreads(t, tab, 4, 25)
	})
}

// runProg runs a program with extra environment, for at most a minute; it
// reports false when strace said it may not trace.
func runProg(t *testing.T, env []string, name string, args ...string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if name == "strace" && bytes.Contains(out, []byte("Operation not permitted")) {
			return false
		}
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return true
}

// checkThreads reconciles the syscall traces of threads.c and checks the
// threads of its messages.
func checkThreads(t *testing.T, tab *preload.Table, nThreads, per int) {
	t.Helper()
	r, err := reconcile.New(reconcile.Options{Preload: tab, Boundaries: reconcile.BoundWrites, Naming: reconcile.NameProcess})
	if err != nil {
		t.Fatal(err)
	}
	tr, rep, err := r.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.Check(); err != nil {
		t.Fatal(err)
	}
	var mainPID, childPID int32
	for _, p := range tab.Processes() {
		if len(p.Children) == 1 {
			mainPID, childPID = int32(p.PID), int32(p.Children[0])
		}
	}
	if mainPID == 0 {
		t.Fatalf("no process forked one child: %+v", tab.Processes())
	}
	byConn := map[uint32]trace.Task{}
	perThread := map[trace.Task]int{}
	for i := range tr.Messages {
		m := &tr.Messages[i]
		if m.Sender != m.Receiver || !m.Sender.Known() || m.Sender.TID == 0 {
			t.Fatalf("message %d: written by %v, read by %v; want one thread", i, m.Sender, m.Receiver)
		}
		if task, ok := byConn[m.Conn]; ok && task != m.Sender {
			t.Errorf("connection %d: threads %v and %v", m.Conn, task, m.Sender)
		}
		byConn[m.Conn] = m.Sender
		perThread[m.Sender]++
	}
	threads := 0
	for task, n := range perThread {
		switch task.PID {
		case mainPID:
			threads++
			if task.TID == mainPID || n != per {
				t.Errorf("thread %v: %d messages, want %d from a thread that is not the main one", task, n, per)
			}
		case childPID:
			if task.TID != childPID || n != 1 {
				t.Errorf("child %v: %d messages, want 1 from its main thread", task, n)
			}
		default:
			t.Errorf("task %v of an unknown process", task)
		}
	}
	if threads != nThreads || rep.WithTask != int64(len(tr.Messages)) || len(tr.Messages) != nThreads*per+1 {
		t.Errorf("%d threads, %d messages (%d with a task); want %d threads, %d messages", threads, len(tr.Messages), rep.WithTask, nThreads, nThreads*per+1)
	}
}
