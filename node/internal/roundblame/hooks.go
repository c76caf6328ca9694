//go:build !riffletest

package roundblame

// hooksBuilt is false in the binary: the compiler drops every hook call
// (Config.Hooks).
const hooksBuilt = false
