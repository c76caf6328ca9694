//go:build paper

// The plots link gonum's plotting (fonts, PDF, EPS, SVG): built only with
// the paper tag (make paper), so that every other build of riffle skips it.

package benchreport

import (
	"fmt"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// plots draws the SVG figures of d into dir.
// PlotsBuilt says whether this build draws the paper report's plots.
const PlotsBuilt = true

func plots(dir string, d PaperData) error {
	save := func(p *plot.Plot, name string) error {
		return p.Save(6*vg.Inch, 4*vg.Inch, filepath.Join(dir, name))
	}
	xy := func(n int, f func(i int) (float64, float64)) plotter.XYs {
		pts := make(plotter.XYs, n)
		for i := range pts {
			pts[i].X, pts[i].Y = f(i)
		}
		return pts
	}
	// Goodput per client against n and against b.
	goodput := func(pts []GoodputPoint, x func(GoodputPoint) float64, paper bool, title, xlabel, name string) error {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, "KiB/s per client"
		get := func(f func(GoodputPoint) float64) plotter.XYs {
			return xy(len(pts), func(i int) (float64, float64) { return x(pts[i]), f(pts[i]) / kib })
		}
		if err := plotutil.AddLinePoints(p,
			"riffle steady", get(func(g GoodputPoint) float64 { return g.Steady }),
			"riffle share", get(func(g GoodputPoint) float64 { return g.Share }),
			"riffle get", get(func(g GoodputPoint) float64 { return g.Get }),
		); err != nil {
			return err
		}
		if paper {
			// The paper's figure, for comparison: one point.
			sc, err := plotter.NewScatter(plotter.XYs{{X: PaperClients, Y: PaperGoodput / kib}})
			if err != nil {
				return err
			}
			sc.GlyphStyle.Shape = draw.CrossGlyph{}
			sc.GlyphStyle.Radius = vg.Points(5)
			p.Add(sc)
			p.Legend.Add("Riffle paper (separate machines)", sc)
		}
		p.Legend.Top = true
		return save(p, name)
	}
	if err := goodput(d.ByN, func(g GoodputPoint) float64 { return float64(g.Clients) }, true,
		"goodput per client against n (m = 3, k = 1)", "clients n", "goodput_n.svg"); err != nil {
		return err
	}
	if err := goodput(d.ByB, func(g GoodputPoint) float64 { return float64(g.ChunkSize) / kib }, false,
		"goodput per client against b", "chunk size b (KiB)", "goodput_b.svg"); err != nil {
		return err
	}
	// Setup time against n and against m.
	setup := func(pts []SetupPoint, x func(SetupPoint) float64, title, xlabel, name string) error {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, "seconds"
		if err := plotutil.AddLinePoints(p,
			"critical path (servers on separate machines)", xy(len(pts), func(i int) (float64, float64) { return x(pts[i]), pts[i].Critical.Seconds() }),
			"all servers on this machine", xy(len(pts), func(i int) (float64, float64) { return x(pts[i]), pts[i].AllInOne.Seconds() }),
		); err != nil {
			return err
		}
		p.Legend.Top, p.Legend.Left = true, true
		return save(p, name)
	}
	if err := setup(d.SetupN, func(s SetupPoint) float64 { return float64(s.Clients) }, "setup time against n (m = 3)", "clients n", "setup_n.svg"); err != nil {
		return err
	}
	mn := 0
	if len(d.SetupM) > 0 {
		mn = d.SetupM[0].Clients
	}
	if err := setup(d.SetupM, func(s SetupPoint) float64 { return float64(s.Servers) }, fmt.Sprintf("setup time against m (n = %d)", mn), "servers m", "setup_m.svg"); err != nil {
		return err
	}
	// PIR answers per second against Q and against L.
	pirPlot := func(pts []PIRPoint, x func(PIRPoint) float64, title, xlabel, name string) error {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, xlabel, "answers per second"
		if err := plotutil.AddLinePoints(p,
			"engine (all cores)", xy(len(pts), func(i int) (float64, float64) { return x(pts[i]), pts[i].Engine }),
			"reference (one core)", xy(len(pts), func(i int) (float64, float64) { return x(pts[i]), pts[i].Reference }),
		); err != nil {
			return err
		}
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{}
		p.Legend.Top = true
		return save(p, name)
	}
	if len(d.PIRQ) > 0 {
		if err := pirPlot(d.PIRQ, func(q PIRPoint) float64 { return float64(q.Q) },
			fmt.Sprintf("PIR answers/s against Q (L = %d, b = %g KiB)", d.PIRQ[0].L, float64(d.PIRQ[0].B)/kib), "queries Q", "pir_q.svg"); err != nil {
			return err
		}
	}
	if len(d.PIRL) > 0 {
		if err := pirPlot(d.PIRL, func(q PIRPoint) float64 { return float64(q.L) },
			fmt.Sprintf("PIR answers/s against L (Q = %d, b = %g KiB)", d.PIRL[0].Q, float64(d.PIRL[0].B)/kib), "rows L", "pir_l.svg"); err != nil {
			return err
		}
	}
	// A round's time split, stacked bars per n.
	p := plot.New()
	p.Title.Text, p.Y.Label.Text = "a round's time split (per server, chain mix summed)", "milliseconds"
	names := make([]string, len(d.ByN))
	for i, g := range d.ByN {
		names[i] = fmt.Sprintf("n=%d", g.Clients)
	}
	parts := []struct {
		name string
		f    func(Round) time.Duration
	}{
		{"chain mix", func(r Round) time.Duration { return r.ChainMix }},
		{"verify", func(r Round) time.Duration { return r.Verify }},
		{"store", func(r Round) time.Duration { return r.Store }},
		{"PIR", func(r Round) time.Duration { return r.PIR }},
		{"network and waiting", func(r Round) time.Duration { return r.Other }},
	}
	var below *plotter.BarChart
	for j, part := range parts {
		vs := make(plotter.Values, len(d.ByN))
		for i, g := range d.ByN {
			vs[i] = float64(part.f(g.Round)) / float64(time.Millisecond)
		}
		bar, err := plotter.NewBarChart(vs, vg.Points(30))
		if err != nil {
			return err
		}
		bar.LineStyle.Width = 0
		bar.Color = plotutil.Color(j)
		if below != nil {
			bar.StackOn(below)
		}
		p.Add(bar)
		p.Legend.Add(part.name, bar)
		below = bar
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.NominalX(names...)
	return save(p, "round_split.svg")
}
