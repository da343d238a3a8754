// Command surface keeps the root package from growing back into one type,
// for .ci/run: it counts, with go/ast, the methods of FileStore and the
// root package's exported names — functions, types, constants, variables
// and the exported methods of exported types, leaving out those marked
// Deprecated (aliases kept for one minor version) — and fails when either
// is past its limit.
//
// The limits are where the code is, not where it was: lower them when a
// change takes names out. Run from anywhere in the repository:
// go run ./scripts/surface
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"

	"github.com/taskgraph-dev/taskgraph/scripts/internal/repo"
)

const (
	// maxFileStoreMethods: each mechanism of the file store is a type of
	// its own (the change log, spares, the cache directory), not a set of
	// FileStore methods.
	maxFileStoreMethods = 80
	// maxExports: the root's exported names. Issue 40 set out to take 40
	// of its 332 out (CLI-only helpers to packages of their own); since,
	// other issues added 54 (liveness: 24; verified completion: 20), and
	// the git helpers moved to package gitrepo (−10). This is the count
	// today, so that nothing grows it unseen: a change that adds a
	// capability raises it by the names it adds, and says so. Write keys
	// (issue 41 item 5): 6; approval gates and links (issue 42): 31, of
	// which 8 are the Approver and ApprovalPolicer methods MemStore and
	// FileStore get from the approvals type they embed. Checks.RunHeld
	// (a check keeps its task's claim alive): 1.
	maxExports = 414
)

func main() {
	root, err := repo.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, "surface:", err)
		os.Exit(2)
	}
	c, err := count(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "surface:", err)
		os.Exit(2)
	}
	fails := c.check(maxFileStoreMethods, maxExports)
	for _, f := range fails {
		fmt.Println(f)
	}
	if len(fails) > 0 {
		os.Exit(1)
	}
	fmt.Printf("surface: FileStore has %d methods (at most %d), the root exports %d names (at most %d)\n",
		c.methods["FileStore"], maxFileStoreMethods, c.exports, maxExports)
}

// counts is what count found in a package.
type counts struct {
	methods map[string]int // by receiver type
	exports int
	// hidden counts the exported methods of unexported types, and
	// embedded names the unexported types each exported struct embeds:
	// their methods are the exported type's too, so they count.
	hidden   map[string]int
	embedded []string
}

func (c counts) check(maxMethods, maxExports int) []string {
	var fails []string
	if n := c.methods["FileStore"]; n > maxMethods {
		fails = append(fails, fmt.Sprintf("FileStore has %d methods, more than %d: give the mechanism you added a type of its own (as changelog.Log, cachedir.Spares, cachedir.Dir)", n, maxMethods))
	}
	if c.exports > maxExports {
		fails = append(fails, fmt.Sprintf("the root package exports %d names, more than %d: keep helpers unexported, or put what only the CLI needs in a package of its own", c.exports, maxExports))
	}
	return fails
}

// count counts the non-test Go files of the package in dir.
func count(dir string) (counts, error) {
	c := counts{methods: map[string]int{}, hidden: map[string]int{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return c, err
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return c, err
		}
		for _, d := range f.Decls {
			c.add(d)
		}
	}
	for _, t := range c.embedded {
		c.exports += c.hidden[t]
	}
	return c, nil
}

func (c *counts) add(d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil {
			if d.Name.IsExported() && !deprecated(d.Doc) {
				c.exports++
			}
			return
		}
		recv := d.Recv.List[0].Type
		if star, ok := recv.(*ast.StarExpr); ok {
			recv = star.X
		}
		if generic, ok := recv.(*ast.IndexExpr); ok {
			recv = generic.X
		}
		if id, ok := recv.(*ast.Ident); ok {
			c.methods[id.Name]++
			if d.Name.IsExported() && !deprecated(d.Doc) {
				if id.IsExported() {
					c.exports++
				} else {
					c.hidden[id.Name]++
				}
			}
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() && !deprecated(d.Doc) && !deprecated(s.Doc) {
					c.exports++
					c.embeds(s)
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() && !deprecated(d.Doc) && !deprecated(s.Doc) {
						c.exports++
					}
				}
			}
		}
	}
}

// embeds records the unexported types the exported struct s embeds.
func (c *counts) embeds(s *ast.TypeSpec) {
	st, ok := s.Type.(*ast.StructType)
	if !ok {
		return
	}
	for _, f := range st.Fields.List {
		t := f.Type
		if star, ok := t.(*ast.StarExpr); ok {
			t = star.X
		}
		if id, ok := t.(*ast.Ident); ok && len(f.Names) == 0 && !id.IsExported() {
			c.embedded = append(c.embedded, id.Name)
		}
	}
}

func deprecated(doc *ast.CommentGroup) bool {
	return doc != nil && strings.Contains(doc.Text(), "Deprecated:")
}
