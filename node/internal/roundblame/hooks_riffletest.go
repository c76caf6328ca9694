//go:build riffletest

package roundblame

// hooksBuilt: the tests' hooks are in this build (Config.Hooks).
const hooksBuilt = true
