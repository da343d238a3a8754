// Package errs holds the sentinel errors that packages the root imports
// (gitrepo) return too, so that errors.Is matches the root's name for
// them: taskgraph.ErrInvalid is Invalid.
package errs

import "errors"

// Invalid is taskgraph.ErrInvalid.
var Invalid = errors.New("invalid argument")
