// Package fsinfo says what filesystem a directory is on and which directory
// it is: the facts from which a FileStore chooses how to make writes
// durable, and by which its change log recognises the directory it
// belongs to.
package fsinfo

import (
	"slices"
	"strings"
)

// Info describes the filesystem holding a directory.
type Info struct {
	// Type is the filesystem type as the kernel names it ("ext4", "xfs",
	// "btrfs", "overlay", "nfs4", …), or "" if it could not be learned.
	Type string
	// Options are the mount's options, the filesystem's own (for ext4,
	// every one in effect, defaults included) after the mount point's.
	Options []string
	// AllOptions: Options include every option in effect, defaults
	// included (read for ext4 from /proc/fs/ext4/<device>/options).
	AllOptions bool
}

// Option returns the value of the option name ("data" → "ordered"), or
// "" and false; a flag option ("noauto_da_alloc") has the value "".
func (i Info) Option(name string) (string, bool) {
	found, value := false, ""
	for _, o := range i.Options {
		k, v, _ := strings.Cut(o, "=")
		if k == name {
			found, value = true, v // the last one wins, as at mount
		}
	}
	return value, found
}

// Has reports whether the flag option name is set.
func (i Info) Has(name string) bool {
	_, ok := i.Option(name)
	return ok
}

// String is the type and the options that matter to durability.
func (i Info) String() string {
	if i.Type == "" {
		return "unknown filesystem"
	}
	var shown []string
	for _, o := range i.Options {
		k, _, _ := strings.Cut(o, "=")
		switch k {
		case "data", "noauto_da_alloc", "auto_da_alloc", "dioread_nolock", "dioread_lock", "nodelalloc", "sync", "dirsync":
			// Once each, where it is in effect (the last one wins).
			shown = slices.DeleteFunc(shown, func(s string) bool { return s == o || strings.HasPrefix(s, k+"=") })
			shown = append(shown, o)
		}
	}
	if len(shown) == 0 {
		return i.Type
	}
	return i.Type + " (" + strings.Join(shown, ",") + ")"
}
