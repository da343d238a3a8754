// The design map's checks: every root file named once, every step of the
// reading path declared where the map says.

package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

const designPage = "docs/design.md"

var (
	// mapRow is a row of the map: a table row whose first cell names one
	// root file.
	mapRow = regexp.MustCompile("^\\|\\s*`([^`/]+\\.go)`\\s*\\|")
	// step is a step of the reading path: `file.go:Func` or
	// `file.go:Type.Method`, the file in the root or named by its path
	// from the root (`internal/changelog/log.go:Log.News`).
	step = regexp.MustCompile("`([^`:]+\\.go):(?:([A-Za-z_][A-Za-z0-9_]*)\\.)?([A-Za-z_][A-Za-z0-9_]*)`")
)

// readingHeading is the heading of the section that holds the reading path.
const readingHeading = "## Reading the source"

// checkDesign returns a finding for every root .go file (tests aside) the
// design map does not name exactly once, every row naming a file that is
// not there, and every step of the reading path not declared in its file.
func checkDesign(root string) []string {
	data, err := os.ReadFile(filepath.Join(root, designPage))
	if err != nil {
		return []string{err.Error()}
	}
	var findings []string
	named := map[string]int{}
	lines := proseLines(string(data))
	for _, line := range lines {
		if m := mapRow.FindStringSubmatch(line); m != nil {
			named[m[1]]++
		}
	}
	files, err := rootFiles(root)
	if err != nil {
		return []string{err.Error()}
	}
	for _, f := range files {
		switch n := named[f]; {
		case n == 0:
			findings = append(findings, fmt.Sprintf("%s: the map does not name %s", designPage, f))
		case n > 1:
			findings = append(findings, fmt.Sprintf("%s: the map names %s %d times", designPage, f, n))
		}
		delete(named, f)
	}
	for _, f := range sortedKeys(named) {
		findings = append(findings, fmt.Sprintf("%s: the map names %s, which is not a file of the root package", designPage, f))
	}

	steps := 0
	in := false
	for i, line := range lines {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == readingHeading
			continue
		}
		if !in {
			continue
		}
		for _, m := range step.FindAllStringSubmatch(line, -1) {
			steps++
			if err := declared(root, m[1], m[2], m[3]); err != nil {
				findings = append(findings, fmt.Sprintf("%s:%d: %s: %v", designPage, i+1, strings.Trim(m[0], "`"), err))
			}
		}
	}
	if steps == 0 {
		findings = append(findings, fmt.Sprintf("%s: no section %q naming `file.go:Type.method` steps", designPage, readingHeading))
	}
	return findings
}

// rootFiles returns the non-test .go files of the root package.
func rootFiles(root string) ([]string, error) {
	matches, err := filepath.Glob(filepath.Join(root, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []string
	for _, m := range matches {
		if name := filepath.Base(m); !strings.HasSuffix(name, "_test.go") {
			files = append(files, name)
		}
	}
	return files, nil
}

// declared reports whether file declares the function fn (recv empty) or
// the method recv.fn.
func declared(root, file, recv, fn string) error {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, file), nil, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn {
			continue
		}
		if recv == "" && fd.Recv == nil {
			return nil
		}
		if recv != "" && fd.Recv != nil && len(fd.Recv.List) == 1 && receiverType(fd.Recv.List[0].Type) == recv {
			return nil
		}
	}
	if recv != "" {
		return fmt.Errorf("%s declares no method %s.%s", file, recv, fn)
	}
	return fmt.Errorf("%s declares no function %s", file, fn)
}

// receiverType returns the name of a receiver's type: T of T, *T, T[P].
func receiverType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiverType(t.X)
	case *ast.IndexExpr:
		return receiverType(t.X)
	case *ast.IndexListExpr:
		return receiverType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
