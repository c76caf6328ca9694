package main

import (
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"sync"
	"time"
)

// peakHeap writes a heap profile each time the live heap (as of the last
// collection) reaches a new high, so that the file left at the end shows
// what was held at the run's peak rather than at its end, when the
// networks are closed.
type peakHeap struct {
	path string
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
	err  error
}

const liveHeapMetric = "/gc/heap/live:bytes"

func startPeakHeap(path string, every time.Duration) (*peakHeap, error) {
	p := &peakHeap{path: path, stop: make(chan struct{})}
	if err := p.sample(); err != nil { // fails early on a bad path
		return nil, err
	}
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				if err := p.sample(); err != nil && p.err == nil {
					p.err = err
				}
			}
		}
	}()
	return p, nil
}

func (p *peakHeap) sample() error {
	s := []metrics.Sample{{Name: liveHeapMetric}}
	metrics.Read(s)
	live := s[0].Value.Uint64()
	if live <= p.peak && p.peak != 0 {
		return nil
	}
	p.peak = live
	tmp := p.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("memprofile: %w", err)
	}
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p.path)
	}
	if err != nil {
		return fmt.Errorf("memprofile: %w", err)
	}
	return nil
}

// finish stops the sampling and returns the peak live heap seen.
func (p *peakHeap) finish() (uint64, error) {
	close(p.stop)
	p.done.Wait()
	return p.peak, p.err
}

// startProfiles starts a CPU profile into cpu and a heap profile at the
// highest live heap into mem, either "" for none (`riffle server`, each
// server of `riffle bench --processes`). stop ends both and returns the
// peak live heap seen.
func startProfiles(cpu, mem string) (stop func() (uint64, error), err error) {
	var cf *os.File
	if cpu != "" {
		if cf, err = os.Create(cpu); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(cf); err != nil {
			cf.Close()
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	var ph *peakHeap
	if mem != "" {
		if ph, err = startPeakHeap(mem, time.Second); err != nil {
			if cf != nil {
				pprof.StopCPUProfile()
				cf.Close()
			}
			return nil, err
		}
	}
	return func() (uint64, error) {
		var peak uint64
		var err error
		if ph != nil {
			peak, err = ph.finish()
		}
		if cf != nil {
			pprof.StopCPUProfile()
			if cerr := cf.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("cpu profile: %w", cerr)
			}
		}
		return peak, err
	}, nil
}
