//go:build windows && wine

// Built only for the tests under Wine (scripts/wine-test builds with
// -tags wine and -ldflags=-checklinkname=0), never for a release.

package atomicfile

import _ "unsafe" // for go:linkname

// Wine 8 does not implement FileDispositionInformationEx, and answers
// STATUS_NOT_IMPLEMENTED, which Go's delete (os.Root.Remove, os.RemoveAll,
// and so testing's TempDir cleanup) does not take as a cue for its
// fallback. This switch, Go's own for its tests, makes every delete take
// the fallback: FileDispositionInformation, the delete of Windows before
// 10 1607, which Wine implements.
//
//go:linkname deleteatFallback internal/syscall/windows.TestDeleteatFallback
var deleteatFallback bool

func init() { deleteatFallback = true }

// SetDeleteFallback turns Go's delete fallback on or off: off, a delete
// takes the path of a release build, which Wine 8 refuses (a test of a
// directory whose journal cannot be removed).
func SetDeleteFallback(on bool) { deleteatFallback = on }
