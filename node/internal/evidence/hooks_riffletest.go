//go:build riffletest

package evidence

// hooksBuilt: the tests' hooks are in this build (Config.Hooks).
const hooksBuilt = true
