// Command doccheck keeps the documentation true to the tree, for .ci/run:
//
//   - every relative link and anchor in docs/*.md and README.md leads
//     somewhere: the file exists, and the anchor is one GitHub makes of a
//     heading of that page;
//   - docs/design.md's map names every non-test .go file of the root
//     package exactly once, and no file that is not there;
//   - every step of its "Reading the source" path, `file.go:Type.method`
//     or `file.go:Func`, is declared in that file;
//   - every test a page names (TestX) is declared in a _test.go file;
//   - no heading in docs/ names a commit or a date (a round of
//     measurement belongs in bench/notebook), and docs/performance.md
//     keeps to 200 lines.
//
// It prints each finding and exits 1 if there is any. Run from anywhere in
// the repository: go run ./scripts/doccheck
package main

import (
	"fmt"
	"os"

	"github.com/taskgraph-dev/taskgraph/scripts/internal/repo"
)

func main() {
	root, err := repo.Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		os.Exit(2)
	}
	findings := checkLinks(root)
	findings = append(findings, checkDesign(root)...)
	findings = append(findings, checkTestNames(root)...)
	findings = append(findings, checkNotebook(root)...)
	for _, f := range findings {
		fmt.Println(f)
	}
	if len(findings) > 0 {
		fmt.Printf("doccheck: %d finding(s)\n", len(findings))
		os.Exit(1)
	}
	fmt.Println("doccheck: links, anchors, the design map, its reading path and the tests the pages name are alive; no page of docs/ is a round")
}
