//go:build riffletest

package leader

// hooksBuilt: the tests' hooks are in this build (Config.Hooks).
const hooksBuilt = true
