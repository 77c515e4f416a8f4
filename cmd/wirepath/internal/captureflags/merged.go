package captureflags

import (
	"context"
	"io"

	"github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil"
	"github.com/wirepath/wirepath/pcapio"
)

// WriteMerged writes the merge's packets to dst as pcapng (with a comment
// on each packet naming the sniffers that saw it when comments is set) and
// returns how many; it stops when ctx is cancelled.
func WriteMerged(ctx context.Context, dst io.Writer, m *pcapio.Merger, comments bool) (int64, error) {
	mw, err := pcapio.NewMergeWriter(dst, m.Sniffers(), m.Offsets(), comments)
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		p, err := m.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
		if n%4096 == 0 && ctx.Err() != nil {
			return n, ctx.Err()
		}
		if err := mw.Write(p); err != nil {
			return n, err
		}
		n++
	}
	return n, mw.Flush()
}

// WriteMergedFile writes the merged capture of paths to the file path, as
// `wirepath merge -o path` does (atomically: a failed run leaves no file),
// and returns the number of packets written.
func (f *Flags) WriteMergedFile(ctx context.Context, ios *cmdutil.IOStreams, paths []string, path string) (int64, error) {
	m, finish, err := f.Open(ios, paths)
	if err != nil {
		return 0, err
	}
	defer m.Close()
	file, err := cmdutil.CreateAtomic(path)
	if err != nil {
		return 0, err
	}
	defer file.Abort() // unless committed
	n, err := WriteMerged(ctx, file, m, true)
	finish()
	if err != nil {
		return n, err
	}
	return n, file.Commit()
}
