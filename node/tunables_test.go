package node

import (
	"reflect"
	"testing"
	"time"
)

// TestTunablesDefaults: every field of DefaultTunables is a positive
// duration, a zero field takes its default and a set one is kept, and a
// server built with a zero Timing runs with the defaults.
func TestTunablesDefaults(t *testing.T) {
	d := reflect.ValueOf(DefaultTunables())
	for i := range d.NumField() {
		f := d.Type().Field(i)
		if f.Type != reflect.TypeFor[time.Duration]() {
			t.Fatalf("Tunables.%s is a %v, want a time.Duration", f.Name, f.Type)
		}
		if d.Field(i).Int() <= 0 {
			t.Errorf("DefaultTunables().%s = %v, want a positive duration", f.Name, d.Field(i).Interface())
		}
	}
	if got := (Tunables{}).WithDefaults(); got != DefaultTunables() {
		t.Fatalf("zero Tunables with defaults: %+v, want %+v", got, DefaultTunables())
	}
	want := DefaultTunables()
	want.OutsiderPoll = 300 * time.Millisecond
	if got := (Tunables{OutsiderPoll: 300 * time.Millisecond, AbortSettle: -1}).WithDefaults(); got != want {
		t.Fatalf("one field set: %+v, want %+v", got, want)
	}
	s := beaconServer(t)
	if s.cfg.Timing != DefaultTunables() {
		t.Fatalf("a server with a zero Timing runs with %+v, want %+v", s.cfg.Timing, DefaultTunables())
	}
}
