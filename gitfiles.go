// The names that moved to package gitrepo, kept for one minor version: a
// library user who opens a directory by its path needs none of them, and
// the taskgraph command, which does, imports gitrepo.

package taskgraph

import (
	"github.com/taskgraph-dev/taskgraph/gitrepo"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
)

// GitIgnoreName is the name of the file WriteGitIgnore writes.
//
// Deprecated: use gitrepo.IgnoreName. This name goes at the next minor version.
const GitIgnoreName = gitrepo.IgnoreName

// TokensFileName is the file in a task directory that keeps the hashes of
// a hub's tokens.
//
// Deprecated: package hub names it (hub.OpenTokenFile). This name goes at
// the next minor version.
const TokensFileName = filenames.Tokens

// WriteGitIgnore is gitrepo.WriteIgnore.
//
// Deprecated: use gitrepo.WriteIgnore. This name goes at the next minor version.
func WriteGitIgnore(dir string) (bool, error) { return gitrepo.WriteIgnore(dir) }

// GitIgnoreMissing is gitrepo.IgnoreMissing.
//
// Deprecated: use gitrepo.IgnoreMissing. This name goes at the next minor version.
func GitIgnoreMissing(dir string) ([]string, error) { return gitrepo.IgnoreMissing(dir) }

// GitAttributesName is the name of the file WriteGitAttributes writes.
//
// Deprecated: use gitrepo.AttributesName. This name goes at the next minor version.
const GitAttributesName = gitrepo.AttributesName

// GitDriver is the name of the merge driver and clean filter in git's
// configuration.
//
// Deprecated: use gitrepo.Driver. This name goes at the next minor version.
const GitDriver = gitrepo.Driver

// WriteGitAttributes is gitrepo.WriteAttributes.
//
// Deprecated: use gitrepo.WriteAttributes. This name goes at the next minor version.
func WriteGitAttributes(dir string) (bool, error) { return gitrepo.WriteAttributes(dir) }

// GitAttributesMissing is gitrepo.AttributesMissing.
//
// Deprecated: use gitrepo.AttributesMissing. This name goes at the next minor version.
func GitAttributesMissing(dir string) ([]string, error) { return gitrepo.AttributesMissing(dir) }

// DirName is the name of a task directory that FindDir looks for.
//
// Deprecated: use gitrepo.DirName. This name goes at the next minor version.
const DirName = gitrepo.DirName

// FindDir is gitrepo.FindDir.
//
// Deprecated: use gitrepo.FindDir. This name goes at the next minor version.
func FindDir(start string) (string, error) { return gitrepo.FindDir(start) }
