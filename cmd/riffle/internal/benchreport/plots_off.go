//go:build !paper

package benchreport

import "errors"

// PlotsBuilt says whether this build draws the paper report's plots: not
// without the paper tag (plots.go).
const PlotsBuilt = false

// ErrNoPlots is Paper's error in a build without the plots.
var ErrNoPlots = errors.New("this riffle was built without the report's plots (they link gonum's plotting into every build): build it with `make paper` (go build -tags paper ./cmd/riffle)")

func plots(dir string, d PaperData) error { return ErrNoPlots }
