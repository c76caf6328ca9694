package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// profile is one run's statement coverage: the blocks it ran, each with
// its count of statements.
type profile map[string]int

// readProfile reads a text coverage profile (go test -coverprofile).
func readProfile(r io.Reader) (profile, error) {
	p := profile{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") || line == "" {
			continue
		}
		// file:l.c,l.c numstmt count
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("coverage profile: bad line %q", line)
		}
		n, err1 := strconv.Atoi(f[1])
		c, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("coverage profile: bad line %q", line)
		}
		if c > 0 && n > 0 {
			p[f[0]] = n
		}
	}
	return p, sc.Err()
}

// selection is the cheapest set of units found whose coverage is the
// union of every unit's.
type selection struct {
	keep        []string
	stmts       int     // statements the union covers
	cost, total float64 // race CPU of the kept units and of all
}

// choose picks units until every block some unit covers is covered:
// greedily by new statements per second of race CPU, then it drops, the
// dearest first, each kept unit whose blocks the others all cover.
func choose(units []string, cover map[string]profile, cost map[string]float64) selection {
	union := profile{}
	var sel selection
	for _, u := range units {
		for b, n := range cover[u] {
			union[b] = n
		}
		sel.total += cost[u]
	}
	for _, n := range union {
		sel.stmts += n
	}
	price := func(u string) float64 { return max(cost[u], 0.01) }
	covered := map[string]int{} // block -> kept units covering it
	kept := map[string]bool{}
	left := len(union)
	for left > 0 {
		best, bestRate := "", 0.0
		for _, u := range units {
			if kept[u] {
				continue
			}
			gain := 0
			for b, n := range cover[u] {
				if covered[b] == 0 {
					gain += n
				}
			}
			if r := float64(gain) / price(u); gain > 0 && (r > bestRate || r == bestRate && u < best) {
				best, bestRate = u, r
			}
		}
		kept[best] = true
		for b := range cover[best] {
			if covered[b] == 0 {
				left--
			}
			covered[b]++
		}
	}
	byCost := make([]string, 0, len(kept))
	for u := range kept {
		byCost = append(byCost, u)
	}
	sort.Slice(byCost, func(i, j int) bool {
		if price(byCost[i]) != price(byCost[j]) {
			return price(byCost[i]) > price(byCost[j])
		}
		return byCost[i] < byCost[j]
	})
	for _, u := range byCost {
		redundant := true
		for b := range cover[u] {
			if covered[b] < 2 {
				redundant = false
				break
			}
		}
		if redundant {
			delete(kept, u)
			for b := range cover[u] {
				covered[b]--
			}
		}
	}
	for _, u := range units {
		if kept[u] {
			sel.keep = append(sel.keep, u)
			sel.cost += cost[u]
		}
	}
	return sel
}

// leftOut names what the race pass skips: each test or case not kept,
// a parent in place of its subtests when it keeps none of them.
func leftOut(c *costs, kept map[string]bool) []string {
	// keeps: a name, or one of its subtests, is kept.
	keeps := map[string]bool{}
	for u := range kept {
		for n := u; ; {
			keeps[n] = true
			i := strings.LastIndexByte(n, '/')
			if i < 0 {
				break
			}
			n = n[:i]
		}
	}
	var out []string
	for _, n := range c.Order {
		if keeps[n] || c.Status[n] == "SKIP" || c.Status[n] == "" {
			continue
		}
		// The highest name kept nowhere below.
		if i := strings.LastIndexByte(n, '/'); i > 0 && !keeps[n[:i]] {
			continue
		}
		out = append(out, n)
	}
	return out
}

// runPattern is -test.run's pattern for exactly the test name.
func runPattern(name string) string {
	el := strings.Split(name, "/")
	for i, e := range el {
		el[i] = "^" + regexp.QuoteMeta(e) + "$"
	}
	return strings.Join(el, "/")
}
