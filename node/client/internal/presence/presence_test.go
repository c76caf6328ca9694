package presence

import (
	"crypto/rand"
	"math"
	"testing"
	"testing/synctest"
)

// TestPresenceDraw (§5.4 v3): the wait before a job and before leaving is
// 2 + G full epochs, G geometric with p = ½, capped at 8: every value's
// frequency within 5 standard deviations of its probability, whatever
// the client does (the draw reads only random bytes).
func TestPresenceDraw(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const draws = 64000
		count := map[int]int{}
		for range draws {
			w, err := Draw(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			if w < Min || w > Max {
				t.Fatalf("wait %d outside [%d, %d]", w, Min, Max)
			}
			count[w]++
		}
		for w := Min; w <= Max; w++ {
			p := math.Pow(0.5, float64(w-Min+1))
			if w == Max {
				p *= 2 // the cap takes the tail
			}
			mean, sd := draws*p, math.Sqrt(draws*p*(1-p))
			if math.Abs(float64(count[w])-mean) > 5*sd {
				t.Fatalf("wait %d drawn %d times, want about %.0f", w, count[w], mean)
			}
		}
	})
}
