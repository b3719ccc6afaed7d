package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is the --version line of program prog: the module version and
// the version control state the binary was built from, as the go command
// stamps them into it, then the Go release and platform. What the build did
// not record is left out ("(devel)" for the version).
func Version(prog string) string {
	info, _ := debug.ReadBuildInfo()
	return versionLine(prog, info) + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
}

func versionLine(prog string, info *debug.BuildInfo) string {
	version := ""
	var vcs []string
	if info != nil {
		version = info.Main.Version
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if rev := settings["vcs.revision"]; rev != "" {
			if len(rev) > 12 {
				rev = rev[:12]
			}
			vcs = append(vcs, "revision "+rev)
		}
		if t := settings["vcs.time"]; t != "" {
			vcs = append(vcs, t)
		}
		if settings["vcs.modified"] == "true" {
			vcs = append(vcs, "modified")
		}
	}
	if version == "" {
		version = "(devel)"
	}
	line := prog + " " + version
	if len(vcs) > 0 {
		line += " (" + strings.Join(vcs, ", ") + ")"
	}
	return line
}

// IsVersion reports whether args ask for the version and nothing else.
func IsVersion(args []string) bool {
	return len(args) == 1 && (args[0] == "--version" || args[0] == "-version" || args[0] == "version")
}
