package cmdutil

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release version, set at build time with
// -ldflags "-X github.com/wirepath/wirepath/cmd/wirepath/internal/cmdutil.Version=v1.2.3".
// Left "dev", the module version from the build info is used: what `go
// install github.com/wirepath/wirepath/cmd/wirepath@v1.2.3` recorded.
var Version = "dev"

// VersionString describes this build: the module version, the VCS
// revision (and its time, and whether the tree was modified), the Go
// version and the platform, from runtime/debug.ReadBuildInfo.
func VersionString() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(Version, bi)
}

// versionOf is VersionString for the release version version and the
// build info bi (nil when there is none).
func versionOf(version string, bi *debug.BuildInfo) string {
	rev, when, dirty := "", "", false
	if bi != nil {
		if v := bi.Main.Version; version == "dev" && v != "" && v != "(devel)" {
			version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	switch {
	case rev == "":
		rev = "unknown revision"
	case dirty:
		rev += "+dirty"
	}
	if when != "" {
		rev += " " + when
	}
	return fmt.Sprintf("wirepath %s (%s, %s %s/%s)", version, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
