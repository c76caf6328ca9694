//go:build !riffletest

package evidence

// hooksBuilt is false in the binary: the compiler drops every hook call
// (Config.Hooks).
const hooksBuilt = false
