package cmdutil

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// OutputFlags name the flags of a file a command writes, InputFlags those
// of files (or directories of them) it reads besides its arguments.
var (
	OutputFlags = []string{"output", "save-trace", "truth"}
	InputFlags  = []string{"preload", "roles", "trace", "nat-table"}
)

// CheckOutputs refuses a command line whose output is one of its inputs
// (its arguments, the files named by InputFlags, the files in a directory
// named so): the same file after symbolic links, or under another name
// (a hard link), compared by device and inode. It is a usage error. Run
// before the command, it keeps the input from being overwritten (or
// emptied before it is read).
func CheckOutputs(cmd *cobra.Command, args []string) error {
	inputs := append([]string(nil), args...)
	for _, name := range InputFlags {
		inputs = append(inputs, flagValues(cmd.Flags(), name)...)
	}
	for _, name := range OutputFlags {
		for _, out := range flagValues(cmd.Flags(), name) {
			if out == "" || out == "-" {
				continue
			}
			ofi, err := os.Stat(out)
			if err != nil || ofi.IsDir() {
				continue // nothing there yet, or not a file: nothing to overwrite
			}
			if in, ok := sameAsAny(ofi, inputs); ok {
				return UsageErrorf("output %s is also an input (%s): refusing to overwrite it", out, in)
			}
		}
	}
	return nil
}

// flagValues returns the values of the flag name, if cmd has it and it
// was set.
func flagValues(fs *pflag.FlagSet, name string) []string {
	f := fs.Lookup(name)
	if f == nil || !f.Changed {
		return nil
	}
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.GetSlice()
	}
	return []string{f.Value.String()}
}

// sameAsAny returns the input (or the file in an input directory) that is
// the file fi describes.
func sameAsAny(fi os.FileInfo, inputs []string) (string, bool) {
	for _, in := range inputs {
		if in == "" || in == "-" {
			continue
		}
		ifi, err := os.Stat(in)
		if err != nil {
			continue
		}
		if os.SameFile(ifi, fi) {
			return in, true
		}
		if !ifi.IsDir() {
			continue
		}
		entries, err := os.ReadDir(in)
		if err != nil {
			continue
		}
		for _, e := range entries {
			p := filepath.Join(in, e.Name())
			if efi, err := os.Stat(p); err == nil && os.SameFile(efi, fi) {
				return p, true
			}
		}
	}
	return "", false
}
