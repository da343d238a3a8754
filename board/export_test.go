package board

import "io/fs"

// StaticFiles is the embedded tree the board serves under /static/.
func StaticFiles() fs.FS {
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err)
	}
	return sub
}
