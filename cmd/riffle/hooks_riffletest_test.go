//go:build riffletest

package main

// A riffletest build links node's hooks: TestBinaryHasNoTestHooks's
// positive control reads them from this test binary.
func init() { taggedTest = true }
