package mix

import (
	"fmt"
	"testing"
)

func TestSimulate(t *testing.T) {
	for _, m := range []int{1, 2, 3, 5} {
		for _, n := range []int{1, 2, 3, 100} {
			t.Run(fmt.Sprintf("m=%d/n=%d", m, n), func(t *testing.T) {
				res, err := Simulate(m, n, 2, 64, 2, newDetRand(fmt.Sprintf("sim %d %d", m, n)))
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Position) != n || len(res.Payloads) != 2 {
					t.Fatalf("result shape: %d positions, %d rounds", len(res.Position), len(res.Payloads))
				}
			})
		}
	}
}
