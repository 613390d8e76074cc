package main

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// barChart is a horizontal bar chart: one group of bars per row, one bar
// per series. It renders itself as a standalone SVG without dependencies.
type barChart struct {
	title  string
	axis   string // what the x axis measures
	rows   []string
	series []series
	values [][]float64 // [row][series]; NaN: no bar
	// colors, when set, overrides the series colour per bar ([row][series]).
	colors [][]string
	// markers draws a short vertical tick per row (a target); NaN: none.
	markers []float64
	ref     float64 // value of a dashed vertical reference line; NaN: none
	// log2 puts the axis on a base-2 logarithmic scale; bars then start at
	// 1, so that values below 1 extend left and above 1 extend right.
	log2   bool
	format func(float64) string
}

type series struct{ name, color string }

const (
	chartWidth = 880
	charWidth  = 6.8 // a generous average advance of the 12 px font
	valueSpace = 70  // room right of the plot for the longest value label
	barHeight  = 13
	groupGap   = 9
	chartTop   = 44
	fontFamily = "DejaVu Sans, Helvetica, Arial, sans-serif"
)

var svgEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func esc(s string) string { return svgEscaper.Replace(s) }

func (c barChart) svg() []byte {
	lo, hi := c.domain()
	plotLeft := c.labelWidth()
	plotW := chartWidth - plotLeft - valueSpace
	x := func(v float64) float64 {
		if c.log2 {
			return plotLeft + (math.Log2(v)-math.Log2(lo))/(math.Log2(hi)-math.Log2(lo))*plotW
		}
		return plotLeft + (v-lo)/(hi-lo)*plotW
	}
	groupH := float64(len(c.series)*barHeight + groupGap)
	legendH := 0.0
	if len(c.series) > 1 {
		legendH = 22
	}
	top := chartTop + legendH
	plotH := groupH * float64(len(c.rows))
	height := top + plotH + 40

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" viewBox="0 0 %d %.0f" font-family="%s" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height, fontFamily)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", 10, esc(c.title))
	if legendH > 0 {
		lx := plotLeft
		for _, s := range c.series {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`, lx, chartTop-8.0, s.color)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx+16, chartTop+2.0, esc(s.name))
			lx += 30 + 7*float64(len(s.name))
		}
	}
	// grid and axis
	for _, t := range c.ticks(lo, hi) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, x(t), top, x(t), top+plotH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#555">%s</text>`+"\n", x(t), top+plotH+15, tickLabel(t, c.log2))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#333">%s</text>`+"\n", plotLeft+plotW/2, top+plotH+32, esc(c.axis))
	base := lo
	if c.log2 {
		base = 1
	}
	for i, row := range c.rows {
		gy := top + float64(i)*groupH
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			plotLeft-8, gy+float64(len(c.series)*barHeight)/2+4, esc(row))
		for j, s := range c.series {
			v := c.values[i][j]
			if math.IsNaN(v) || v <= 0 && c.log2 {
				continue
			}
			color := s.color
			if c.colors != nil && c.colors[i][j] != "" {
				color = c.colors[i][j]
			}
			x0, x1 := x(base), x(math.Min(math.Max(v, lo), hi))
			y := gy + float64(j*barHeight)
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>`,
				math.Min(x0, x1), y+1, math.Max(math.Abs(x1-x0), 1), barHeight-2, color, esc(s.name), esc(c.format(v)))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" fill="#333">%s</text>`+"\n",
				math.Max(x0, x1)+3, y+barHeight-3, esc(c.format(v)))
		}
		if c.markers != nil && !math.IsNaN(c.markers[i]) {
			mx := x(c.markers[i])
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" stroke-width="2.5"><title>target</title></line>`+"\n",
				mx, gy-2, mx, gy+float64(len(c.series)*barHeight)+2)
		}
	}
	if !math.IsNaN(c.ref) {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444" stroke-dasharray="4 3"/>`+"\n",
			x(c.ref), top-4, x(c.ref), top+plotH)
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// labelWidth is the room left of the plot for the longest row label.
func (c barChart) labelWidth() float64 {
	longest := 0
	for _, r := range c.rows {
		longest = max(longest, utf8.RuneCountInString(r))
	}
	return math.Max(110, float64(longest)*charWidth+16)
}

// domain is the axis range: from 0 (linear) or a power of two (log2) to a
// little beyond the largest value, marker or reference.
func (c barChart) domain() (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	see := func(v float64) {
		if !math.IsNaN(v) && (!c.log2 || v > 0) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, row := range c.values {
		for _, v := range row {
			see(v)
		}
	}
	for _, m := range c.markers {
		see(m)
	}
	see(c.ref)
	if c.log2 {
		see(1)
		return math.Exp2(math.Floor(math.Log2(lo))), math.Exp2(math.Ceil(math.Log2(hi) + 0.01))
	}
	if math.IsInf(hi, -1) || hi <= 0 {
		hi = 1
	}
	return 0, niceStep(hi*1.08) * math.Ceil(hi*1.08/niceStep(hi*1.08))
}

// niceStep is a 1-2-5 step giving at most about 8 ticks up to hi.
func niceStep(hi float64) float64 {
	raw := hi / 8
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func (c barChart) ticks(lo, hi float64) []float64 {
	var t []float64
	if c.log2 {
		for v := lo; v <= hi*1.0001; v *= 2 {
			t = append(t, v)
		}
		return t
	}
	step := niceStep(hi)
	for v := lo; v <= hi+step/1000; v += step {
		t = append(t, v)
	}
	return t
}

// tickLabel writes log-scale fractions as 1/2, 1/4, ...
func tickLabel(v float64, log2 bool) string {
	if inv := 1 / v; log2 && v < 1 && math.Abs(inv-math.Round(inv)) < 1e-9 {
		return fmt.Sprintf("1/%g", math.Round(inv))
	}
	return fmt.Sprintf("%g", math.Round(v*1000)/1000)
}
