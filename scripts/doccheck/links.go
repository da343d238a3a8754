// The link check: relative links and anchors of the pages for users.

package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// pages returns the Markdown files whose links are checked: docs/*.md
// and README.md, relative to root.
func pages(root string) []string {
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for i, f := range files {
		files[i], _ = filepath.Rel(root, f)
	}
	sort.Strings(files)
	return append([]string{"README.md"}, files...)
}

var (
	// inlineLink matches [text](target) and ![alt](target), with an
	// optional title after the target.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	// refLink matches a reference definition: [name]: target
	refLink = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	// htmlLink matches href="…" and src="…" in inline HTML.
	htmlLink = regexp.MustCompile(`(?:href|src)="([^"]*)"`)
	// htmlAnchor matches the anchors inline HTML sets.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]*)"`)
	// lineAnchor is GitHub's anchor of a line range in a source file.
	lineAnchor = regexp.MustCompile(`^L\d+(-L\d+)?$`)
)

// checkLinks returns a finding for every dead relative link or anchor in
// the pages.
func checkLinks(root string) []string {
	var findings []string
	anchors := map[string]map[string]bool{} // by page, relative to root
	anchorsOf := func(page string) (map[string]bool, error) {
		if a, ok := anchors[page]; ok {
			return a, nil
		}
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			return nil, err
		}
		anchors[page] = headingAnchors(string(data))
		return anchors[page], nil
	}
	for _, page := range pages(root) {
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			findings = append(findings, fmt.Sprintf("%s: %v", page, err))
			continue
		}
		for _, l := range links(string(data)) {
			if external(l.target) {
				continue
			}
			path, frag, _ := strings.Cut(l.target, "#")
			if p, err := url.PathUnescape(path); err == nil {
				path = p
			}
			target := page // a bare #anchor is in the page itself
			if path != "" {
				if strings.HasPrefix(path, "/") {
					target = filepath.Clean(strings.TrimPrefix(path, "/"))
				} else {
					target = filepath.Join(filepath.Dir(page), path)
				}
			}
			where := fmt.Sprintf("%s:%d: link %q", page, l.line, l.target)
			if rel, err := filepath.Rel(root, filepath.Join(root, target)); err != nil || strings.HasPrefix(rel, "..") {
				findings = append(findings, where+": leads out of the repository")
				continue
			}
			fi, err := os.Stat(filepath.Join(root, target))
			if err != nil {
				findings = append(findings, where+": "+target+" does not exist")
				continue
			}
			if frag == "" {
				continue
			}
			if fi.IsDir() || !strings.HasSuffix(target, ".md") {
				if !lineAnchor.MatchString(frag) {
					findings = append(findings, where+": #"+frag+" is not an anchor of "+target)
				}
				continue
			}
			a, err := anchorsOf(target)
			if err != nil {
				findings = append(findings, where+": "+err.Error())
				continue
			}
			if !a[frag] {
				findings = append(findings, where+": "+target+" has no heading whose anchor is #"+frag)
			}
		}
	}
	return findings
}

// external reports whether target leaves the repository: a URL with a
// scheme (https:, mailto:, …).
func external(target string) bool {
	u, err := url.Parse(target)
	return err == nil && u.Scheme != ""
}

type link struct {
	line   int
	target string
}

// links returns the link targets of a Markdown page, outside fenced code
// blocks and code spans.
func links(page string) []link {
	var out []link
	for i, line := range proseLines(page) {
		if line == "" {
			continue
		}
		if m := refLink.FindStringSubmatch(line); m != nil {
			out = append(out, link{i + 1, m[1]})
			continue
		}
		line = stripCodeSpans(line)
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, link{i + 1, m[1]})
		}
		for _, m := range htmlLink.FindAllStringSubmatch(line, -1) {
			out = append(out, link{i + 1, m[1]})
		}
	}
	return out
}

// proseLines returns the page's lines with those of fenced code blocks
// blanked, so that line numbers stay true.
func proseLines(page string) []string {
	lines := strings.Split(page, "\n")
	fence := ""
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]+" \t") == "" {
				fence = ""
			}
			lines[i] = ""
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			for len(fence) < len(trimmed) && trimmed[len(fence)] == fence[0] {
				fence += fence[:1]
			}
			lines[i] = ""
		}
	}
	return lines
}

// stripCodeSpans removes the code spans of a line: a link inside one is
// text, not a link.
func stripCodeSpans(line string) string {
	var b strings.Builder
	for {
		start := strings.Index(line, "`")
		if start < 0 {
			return b.String() + line
		}
		n := len(line[start:]) - len(strings.TrimLeft(line[start:], "`"))
		end := strings.Index(line[start+n:], line[start:start+n])
		if end < 0 {
			return b.String() + line
		}
		b.WriteString(line[:start])
		line = line[start+n+end+n:]
	}
}

var (
	atxHeading    = regexp.MustCompile(`^ {0,3}#{1,6}(?:\s+(.*?))?\s*$`)
	closingHashes = regexp.MustCompile(`(?:^|\s+)#+$`) // "## Title ##"
)

// headingAnchors returns the anchors GitHub gives the headings of a page
// (and those inline HTML sets).
func headingAnchors(page string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(page) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := slug(closingHashes.ReplaceAllString(m[1], ""))
		// GitHub numbers a repeated anchor: x, x-1, x-2, …
		if n := seen[a]; n > 0 {
			seen[a]++
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}

var (
	mdLink  = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag = regexp.MustCompile(`<[^>]+>`)
)

// slug returns the anchor GitHub makes of a heading's Markdown text: the
// text as rendered (links and images by their text, code spans by their
// content, no emphasis or tags), lower-cased, with every character but
// letters, marks, digits, "_", "-" and spaces dropped and each space made
// a "-" (github-slugger).
func slug(heading string) string {
	var text strings.Builder
	// Code spans keep their content as it is; elsewhere links become their
	// text and emphasis markers go.
	rest := heading
	for rest != "" {
		start := strings.Index(rest, "`")
		if start < 0 {
			text.WriteString(rendered(rest))
			break
		}
		n := len(rest[start:]) - len(strings.TrimLeft(rest[start:], "`"))
		end := strings.Index(rest[start+n:], rest[start:start+n])
		if end < 0 {
			text.WriteString(rendered(rest))
			break
		}
		text.WriteString(rendered(rest[:start]))
		text.WriteString(strings.TrimSpace(rest[start+n : start+n+end]))
		rest = rest[start+n+end+n:]
	}
	var b strings.Builder
	for _, r := range strings.ToLower(text.String()) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// rendered returns Markdown text outside code spans as GitHub renders it,
// for a slug: links by their text, no tags, no emphasis markers.
func rendered(s string) string {
	s = mdLink.ReplaceAllString(s, "$1")
	s = htmlTag.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "*", "")
	// An underscore is emphasis only at the edge of a word.
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if r == '_' {
			before := i > 0 && isWord(rs[i-1])
			after := i+1 < len(rs) && isWord(rs[i+1])
			if before != after {
				continue
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }
