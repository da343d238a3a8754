// The test-name check: every guarantee in the docs names the test that
// proves it, so a test renamed or removed must not leave a page naming it.

package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

var (
	// namedTest matches a test named in a page: TestX, Test_x.
	namedTest = regexp.MustCompile(`\bTest[A-Z_][A-Za-z0-9_]*\b`)
	// declaredTest matches a test declared in a Go file.
	declaredTest = regexp.MustCompile(`(?m)^func (Test[A-Z_][A-Za-z0-9_]*)\(`)
)

// checkTestNames finds the tests that the pages (README.md and docs/*.md)
// name and no _test.go file under root declares.
func checkTestNames(root string) []string {
	declared := map[string]bool{}
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		for _, m := range declaredTest.FindAllStringSubmatch(string(data), -1) {
			declared[m[1]] = true
		}
		return nil
	})
	var findings []string
	for _, page := range pages(root) {
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for i, line := range strings.Split(string(data), "\n") {
			for _, name := range namedTest.FindAllString(line, -1) {
				if !declared[name] && !seen[name] {
					seen[name] = true
					findings = append(findings, fmt.Sprintf("%s:%d: names %s, which no _test.go file declares", page, i+1, name))
				}
			}
		}
	}
	sort.Strings(findings)
	return findings
}
