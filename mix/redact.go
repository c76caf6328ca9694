package mix

import (
	"fmt"
	"io"
	"log/slog"
)

// Secret-holding types never print their secrets: fmt would otherwise show
// unexported fields (π_s of a StepSecret, the X25519 seed of a
// ClientSecret) and slog's JSON handler exported ones (a LayerKey's keys).
// Every verb of fmt goes through Format, and slog resolves LogValue before
// any handler sees the value. The methods have value receivers so that both
// a value and a pointer are covered.

func redacted(f fmt.State, name string) { io.WriteString(f, "mix."+name+"{redacted}") }

// Format prints the type name only.
func (ServerSecret) Format(f fmt.State, _ rune) { redacted(f, "ServerSecret") }

// LogValue logs the type name only.
func (ServerSecret) LogValue() slog.Value { return slog.StringValue("mix.ServerSecret{redacted}") }

// Format prints the type name only.
func (RoundKeys) Format(f fmt.State, _ rune) { redacted(f, "RoundKeys") }

// LogValue logs the type name only.
func (RoundKeys) LogValue() slog.Value { return slog.StringValue("mix.RoundKeys{redacted}") }

// Format prints the type name only.
func (ClientSecret) Format(f fmt.State, _ rune) { redacted(f, "ClientSecret") }

// LogValue logs the type name only.
func (ClientSecret) LogValue() slog.Value { return slog.StringValue("mix.ClientSecret{redacted}") }

// Format prints the type name only.
func (StepSecret) Format(f fmt.State, _ rune) { redacted(f, "StepSecret") }

// LogValue logs the type name only.
func (StepSecret) LogValue() slog.Value { return slog.StringValue("mix.StepSecret{redacted}") }

// Format prints the type name only.
func (LayerKey) Format(f fmt.State, _ rune) { redacted(f, "LayerKey") }

// LogValue logs the type name only.
func (LayerKey) LogValue() slog.Value { return slog.StringValue("mix.LayerKey{redacted}") }

// MarshalJSON encodes the type name only: layer keys are never serialised,
// and slog's JSON handler marshals a slice of them without LogValue.
func (LayerKey) MarshalJSON() ([]byte, error) { return []byte(`"mix.LayerKey{redacted}"`), nil }
