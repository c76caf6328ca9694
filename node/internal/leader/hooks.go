//go:build !riffletest

package leader

// hooksBuilt is false in the binary: the compiler drops every hook call
// (Config.Hooks) and the late sends they drive.
const hooksBuilt = false
