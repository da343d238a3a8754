// The bench's chart: cost against graph size, as an SVG.

package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// chart draws the median of each write operation against N (log scale)
// for every file-store shape, as a ratio to the durable-write floor: flat
// lines are the claim that cost does not grow with the graph.
func chart(rep Report) string {
	const w, h, left, right, top, bottom = 720, 420, 60, 190, 30, 50
	ops := []string{"Create", "Claim", "Complete", "Update (add edge)"}
	colors := map[string]string{"Create": "#1f77b4", "Claim": "#ff7f0e", "Complete": "#2ca02c", "Update (add edge)": "#d62728"}
	dashes := map[string]string{"chain": "", "star": "6,3", "dag": "2,3"}
	type pt struct{ n, ratio float64 }
	lines := map[string][]pt{}
	minN, maxN, maxR := math.Inf(1), 0.0, 2.0
	for _, r := range rep.Results {
		if _, ok := dashes[r.Shape]; !ok || r.Note != "" && strings.Contains(r.Note, "WithoutSync") {
			continue
		}
		for _, op := range ops {
			if r.Op == op {
				key := r.Shape + "|" + op
				lines[key] = append(lines[key], pt{float64(r.N), r.Ratio})
				minN, maxN, maxR = math.Min(minN, float64(r.N)), math.Max(maxN, float64(r.N)), math.Max(maxR, r.Ratio)
			}
		}
	}
	if len(lines) == 0 || maxN <= minN {
		return `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`
	}
	maxR = math.Ceil(maxR*2) / 2
	x := func(n float64) float64 {
		return left + (math.Log10(n)-math.Log10(minN))/(math.Log10(maxN)-math.Log10(minN))*(w-left-right)
	}
	y := func(r float64) float64 { return top + (1-r/maxR)*(h-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">taskgraph FileStore: median cost of a write vs graph size (× durable-write floor)</text>`+"\n", left)
	for r := 0.0; r <= maxR+1e-9; r += 0.5 {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%.1f×</text>`+"\n", left, w-right, y(r), y(r), left-6, y(r)+4, r)
	}
	for n := minN; n <= maxN*1.0001; n *= 10 {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(n), x(n), top, h-bottom, x(n), h-bottom+16, humanN(n))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="black" stroke-width="1.5"/><text x="%d" y="%.1f">floor</text>`+"\n", left, w-right, y(1), y(1), w-right+4, y(1)+4)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">tasks in the graph (N)</text>`+"\n", (left+w-right)/2, h-12)
	keys := make([]string, 0, len(lines))
	for k := range lines {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		shape, op, _ := strings.Cut(k, "|")
		ps := lines[k]
		sort.Slice(ps, func(i, j int) bool { return ps[i].n < ps[j].n })
		var path []string
		for _, p := range ps {
			path = append(path, fmt.Sprintf("%.1f,%.1f", x(p.n), y(p.ratio)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="%s"/>`+"\n", colors[op], dashes[shape], strings.Join(path, " "))
		ly := top + 14*i
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/><text x="%d" y="%d">%s, %s</text>`+"\n", w-right+30, w-right+55, ly, ly, colors[op], dashes[shape], w-right+60, ly+4, op, shape)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func humanN(n float64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%gM", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%gk", n/1e3)
	}
	return fmt.Sprint(n)
}
