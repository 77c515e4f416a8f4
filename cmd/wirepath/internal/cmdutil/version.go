package cmdutil

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version, set at build time with
// -ldflags "-X github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil.Version=v1.2.3".
var Version = "dev"

// VersionString describes this build: version, VCS revision and Go version.
func VersionString() string {
	rev, dirty := "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		rev = "unknown revision"
	} else if dirty {
		rev += "+dirty"
	}
	return fmt.Sprintf("wirepath %s (%s, %s %s/%s)", Version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
