// The notebook check: docs/ is for users, so a page states today's
// figures and reasons, not how they came to be round by round.

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// maxPerformanceLines bounds docs/performance.md: today's figures by store
// and size, each with its command; the rounds belong in bench/notebook.
const maxPerformanceLines = 200

// roundHeading matches a heading that dates a round: a commit id or a
// calendar date.
var roundHeading = regexp.MustCompile(`\b[0-9a-f]{7,40}\b|\b20\d\d-\d\d-\d\d\b`)

// checkNotebook finds, in docs/*.md, headings that name a commit or a date
// (a round of measurement, for bench/notebook), and a performance page
// past its length.
func checkNotebook(root string) []string {
	var out []string
	for _, page := range pages(root) {
		if !strings.HasPrefix(page, "docs"+string(filepath.Separator)) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", page, err))
			continue
		}
		lines := strings.Split(string(data), "\n")
		fenced := false
		for i, line := range lines {
			if strings.HasPrefix(line, "```") {
				fenced = !fenced
			}
			if fenced || !strings.HasPrefix(line, "#") {
				continue
			}
			if m := roundHeading.FindString(line); m != "" && hasDigitAndLetter(m) {
				out = append(out, fmt.Sprintf("%s:%d: heading %q names a round (%s): state today's figures and reasons here, and keep the round in bench/notebook", page, i+1, line, m))
			}
		}
		if filepath.Base(page) == "performance.md" && len(lines)-1 > maxPerformanceLines {
			out = append(out, fmt.Sprintf("%s: %d lines, more than %d: today's figures only, each with its command; the rounds belong in bench/notebook", page, len(lines)-1, maxPerformanceLines))
		}
	}
	return out
}

// hasDigitAndLetter tells a commit id or date from a word of hex letters
// ("deadbeef", "facade") or a number.
func hasDigitAndLetter(s string) bool {
	return strings.ContainsAny(s, "0123456789") && (strings.ContainsAny(s, "abcdef") || strings.Count(s, "-") == 2)
}
