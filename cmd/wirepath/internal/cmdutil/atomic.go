package cmdutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// AtomicFile is an output file written under a temporary name in the
// same directory and renamed to its name only when the command succeeds
// (Commit): a failed or interrupted run leaves an existing file as it was
// and no partial one. Every AtomicFile not yet committed or aborted is
// known to RemoveTemporaries, which the signal handler calls.
type AtomicFile struct {
	*os.File
	path string
	done bool
	// direct: the path names no regular file (a device such as
	// /dev/null, a FIFO): it is written in place, never replaced.
	direct bool
}

// temporaries are the temporary files of the AtomicFiles in progress.
var temporaries = struct {
	sync.Mutex
	names  map[string]bool
	closed bool // RemoveTemporaries ran: no commit may follow
}{names: map[string]bool{}}

// CreateAtomic starts writing the file at path: a new temporary file
// beside it. The file gets the mode of the file it replaces, or what
// os.Create would give a new one.
func CreateAtomic(path string) (*AtomicFile, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, &fs.PathError{Op: "create", Path: path, Err: syscall.EISDIR}
	} else if err == nil && !fi.Mode().IsRegular() {
		// Renaming a file over /dev/null would replace the device.
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &AtomicFile{File: f, path: path, direct: true}, nil
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	temporaries.Lock()
	defer temporaries.Unlock()
	if temporaries.closed {
		f.Close()
		os.Remove(f.Name())
		return nil, ErrInterrupted
	}
	temporaries.names[f.Name()] = true
	return &AtomicFile{File: f, path: path}, nil
}

// ErrInterrupted is what writing an output returns once the command was
// interrupted; it maps to ExitInterrupted.
var ErrInterrupted = errors.New("interrupted")

// Path returns the name the file gets when committed.
func (a *AtomicFile) Path() string { return a.path }

// Commit closes the file and renames it to its name, replacing what was
// there.
func (a *AtomicFile) Commit() error {
	if a.done {
		return nil
	}
	a.done = true
	if a.direct {
		return a.File.Close()
	}
	tmp := a.File.Name()
	err := a.File.Close()
	if err == nil {
		err = os.Chmod(tmp, outputMode(a.path))
	}
	temporaries.Lock()
	defer temporaries.Unlock()
	if temporaries.closed {
		err = ErrInterrupted
	}
	if err == nil {
		err = os.Rename(tmp, a.path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	delete(temporaries.names, tmp)
	return err
}

// Abort closes and removes the temporary file; the file at its name is
// left as it was.
func (a *AtomicFile) Abort() {
	if a.done {
		return
	}
	a.done = true
	if a.direct {
		a.File.Close()
		return
	}
	tmp := a.File.Name()
	a.File.Close()
	os.Remove(tmp)
	temporaries.Lock()
	delete(temporaries.names, tmp)
	temporaries.Unlock()
}

// RemoveTemporaries removes the temporary files of every output not yet
// committed, and makes later commits fail: for the signal handler, just
// before the process exits.
func RemoveTemporaries() {
	temporaries.Lock()
	defer temporaries.Unlock()
	temporaries.closed = true
	for name := range temporaries.names {
		os.Remove(name)
	}
	clear(temporaries.names)
}

var umask = sync.OnceValue(func() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
})

// outputMode is the mode of the file at path, or 0666 less the umask for
// a new one (as os.Create makes it).
func outputMode(path string) os.FileMode {
	if fi, err := os.Stat(path); err == nil {
		return fi.Mode().Perm()
	}
	return 0o666 &^ umask()
}
