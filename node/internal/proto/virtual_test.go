package proto

import (
	"testing"
	"testing/synctest"
)

// virtual runs f in a synctest bubble, as package node's tests of the same
// name do (these tests moved from there): the clock is virtual.
func virtual(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, f)
}
