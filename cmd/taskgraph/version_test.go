package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An untagged build never prints a release: a tagged build prints its tag,
// an untagged commit Go stamped its pseudo-version, and a build Go stamped
// with no version the release after the last with -dev and the revision.
func TestVersionOf(t *testing.T) {
	build := func(version string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/taskgraph-dev/taskgraph", Version: version}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	rev := "ccc66b5abcdef0123456789abcdef0123456789a"
	for _, c := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{build("v0.2.0"), "v0.2.0"},
		{build("v0.1.1-0.20261207043554-ccc66b5abcde"), "v0.1.1-0.20261207043554-ccc66b5abcde"},
		{build("v0.0.0-20261207043554-ccc66b5abcde+dirty"), "v0.0.0-20261207043554-ccc66b5abcde+dirty"},
		{build("(devel)", "vcs.revision", rev), "v0.1.1-dev+ccc66b5abcde"},
		{build("(devel)", "vcs.revision", rev, "vcs.modified", "true"), "v0.1.1-dev+ccc66b5abcde.dirty"},
		{build("(devel)"), "v0.1.1-dev"},
		{build(""), "v0.1.1-dev"},
		{nil, "v0.1.1-dev"},
	} {
		assert.Equal(t, c.want, versionOf(c.bi))
	}
}

// A build Go stamps from git (a clone, where .git is a directory) prints
// a pseudo-version with the commit, not the last release.
func TestVersionOfAGitBuild(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("this test builds taskgraph in a git clone: git is not on PATH (%v)", err)
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	clone := filepath.Join(t.TempDir(), "clone")
	out, err := exec.Command(git, "clone", "-q", "--no-local", "--depth", "1", "file://"+root, clone).CombinedOutput()
	require.NoError(t, err, "%s", out)
	head, err := exec.Command(git, "-C", clone, "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "taskgraph")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/taskgraph")
	build.Dir = clone
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true", "GOPROXY=off")
	out, err = build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	got, err := exec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.Regexp(t, `^taskgraph v\d+\.\d+\.\d+-(0\.)?\d{14}-`+strings.TrimSpace(string(head))[:12]+` \(go`, string(got),
		"an untagged commit: a pseudo-version naming it")
}
