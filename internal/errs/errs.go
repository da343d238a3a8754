// Package errs holds the sentinel errors that packages the root imports
// (gitrepo) return too, so that errors.Is matches the root's name for
// them: taskgraph.ErrInvalid is ErrInvalid.
package errs

import "errors"

// ErrInvalid is taskgraph.ErrInvalid.
var ErrInvalid = errors.New("invalid argument")
