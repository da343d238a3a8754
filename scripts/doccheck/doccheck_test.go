package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlug: the anchors GitHub gives headings of the kinds the docs use.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"The full protocol: the directory's fsync after the lock, shared": "the-full-protocol-the-directorys-fsync-after-the-lock-shared",
		"`Board()`: tasks side by side":                                   "board-tasks-side-by-side",
		"Cold reads (2026-12-04, evening)":                                "cold-reads-2026-12-04-evening",
		"Sizes (1,000 – 100,000 tasks): x":                                "sizes-1000--100000-tasks-x",
		"What `max_size` means":                                           "what-max_size-means",
		"*Emphasis* and _words_ with snake_case":                          "emphasis-and-words-with-snake_case",
		"A [link](x.md) in it":                                            "a-link-in-it",
		"Über ünïcode":                                                    "über-ünïcode",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

// write creates the files of a repository under a temporary root.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// expect fails unless findings are exactly one for each of wants (a
// substring each), in order.
func expect(t *testing.T, findings []string, wants ...string) {
	t.Helper()
	if len(findings) != len(wants) {
		t.Fatalf("findings:\n%s\nwant %d", strings.Join(findings, "\n"), len(wants))
	}
	for i, w := range wants {
		if !strings.Contains(findings[i], w) {
			t.Errorf("finding %q does not say %q", findings[i], w)
		}
	}
}

// TestLinks: every kind of dead link is found, and nothing else — links
// in code, external links, line anchors and repeated headings are fine.
func TestLinks(t *testing.T) {
	root := write(t, map[string]string{
		"README.md": "[a](docs/a.md) [b](docs/a.md#notes-1) [bad](docs/a.md#nope)\n",
		"docs/a.md": "# A\n\n## Notes\n\n## Notes\n\n## `Board()`: side by side\n\n" +
			"[ok](#board-side-by-side) [ok](../README.md) [ok](https://example.com/x.md#y) " +
			"[ok](../src.go#L3-L5) ![img](pic.png) [gone](b.md) [gone](#missing) [bad](../src.go#top)\n" +
			"`[code](nowhere.md)`\n\n```\n[fenced](nowhere.md)\n```\n[ref]: ./b.md\n",
		"docs/pic.png": "",
		"src.go":       "package x\n",
	})
	expect(t, checkLinks(root),
		`README.md:1: link "docs/a.md#nope"`,
		`docs/a.md:9: link "b.md": docs/b.md does not exist`,
		`docs/a.md:9: link "#missing"`,
		`docs/a.md:9: link "../src.go#top"`,
		`docs/a.md:15: link "./b.md"`,
	)
}

// TestDesign: a root file missing from the map, named twice, or named but
// gone, and a reading step that names no declared function, are found.
func TestDesign(t *testing.T) {
	root := write(t, map[string]string{
		"go.mod":    "module x\n",
		"a.go":      "package x\n\ntype T struct{}\n\nfunc (*T) M() {}\n\nfunc (T) V() {}\n\nfunc F() {}\n",
		"b.go":      "package x\n\ntype G[P any] struct{}\n\nfunc (g *G[P]) M() {}\n",
		"c.go":      "package x\n",
		"a_test.go": "package x\n",
		"docs/design.md": "# D\n\n| file | what |\n|---|---|\n| `a.go` | a |\n| `c.go` | c |\n| `c.go` | again |\n| `gone.go` | gone |\n\n" +
			"## Reading the source\n\n1. `a.go:T.M`, `a.go:T.V`, `a.go:F`, `b.go:G.M`\n" +
			"2. `a.go:T.Missing`, `a.go:M`, `b.go:F`, `x.go:F`\n\n## After\n\n`a.go:Elsewhere` is not a step.\n",
	})
	expect(t, checkDesign(root),
		"the map does not name b.go",
		"the map names c.go 2 times",
		"the map names gone.go, which is not a file of the root package",
		"a.go:T.Missing: a.go declares no method T.Missing",
		"a.go:M: a.go declares no function M",
		"b.go:F: b.go declares no function F",
		"x.go:F: open",
	)
}

// TestDesignWithoutReadingPath: a design page that lost its reading path
// fails.
func TestDesignWithoutReadingPath(t *testing.T) {
	root := write(t, map[string]string{
		"go.mod":         "module x\n",
		"a.go":           "package x\n",
		"docs/design.md": "| `a.go` | a |\n",
	})
	expect(t, checkDesign(root), `no section "## Reading the source"`)
}

// TestTestNames: a page that names a test no _test.go file declares is
// found; one declared anywhere in the tree is fine.
func TestTestNames(t *testing.T) {
	root := write(t, map[string]string{
		"README.md":     "Proven by `TestThere` and TestGone.\n",
		"docs/a.md":     "`TestDeep` and `TestGone` again; TestingT is no test name.\n",
		"x_test.go":     "package x\n\nfunc TestThere(t *testing.T) {}\n",
		"sub/y_test.go": "package y\n\nfunc TestDeep(t *testing.T) {}\n",
		"sub/z.go":      "package y\n\nfunc TestNotATest() {}\n",
		"docs/b.md":     "TestNotATest\n",
	})
	expect(t, checkTestNames(root),
		"README.md:1: names TestGone",
		"docs/a.md:1: names TestGone",
		"docs/b.md:1: names TestNotATest",
	)
}

// TestNotebook: a heading in docs/ that names a commit or a date, and a
// performance page past its length, are found; a heading with a hex-like
// word or a number, and one inside a code block, are not.
func TestNotebook(t *testing.T) {
	long := "# Performance\n" + strings.Repeat("x\n", maxPerformanceLines)
	root := write(t, map[string]string{
		"README.md":           "# Read me\n\n## Run 1a2b3c4 is fine here\n",
		"docs/a.md":           "# A\n\n## Spares (2c0eae3, 122747b)\n\n## Cold reads (2026-12-04)\n\n## Add a facade, decade 2000\n\n```\n# 1a2b3c4d in a block\n```\n",
		"docs/performance.md": long,
	})
	expect(t, checkNotebook(root),
		`docs/a.md:3: heading "## Spares (2c0eae3, 122747b)" names a round (2c0eae3): state today's figures and reasons here, and keep the round in bench/notebook`,
		`docs/a.md:5: heading "## Cold reads (2026-12-04)" names a round (2026-12-04): state today's figures and reasons here, and keep the round in bench/notebook`,
		`docs/performance.md: 201 lines, more than 200: today's figures only, each with its command; the rounds belong in bench/notebook`,
	)
}
