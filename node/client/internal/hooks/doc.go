// Package hooks is a client's hook points for the tests (riffletest
// builds; empty in the binary, cmd/riffle's TestBinaryHasNoTestHooks checks):
// what the anonymity tests observe of a client (ClientObserver, the
// ground truth of docs/anonymity.md's adversaries), the rules the
// controls break on purpose (§5.2, §6.3, §6.4 and §7 of docs/protocol.md,
// each named where it is broken), the duplicate-share tests' registrations
// (§4.2) and a misbehaving client's onions (§5.1, §8 blame). The old
// decoy rule, the client's own lists, lives here as the positive
// controls' (OwnDecoys). The hook points are functions of a *Hooks, not
// methods: the binary's are empty and inlined away, where an exported
// method would stay linked (reflection keeps them). Hooks has its own
// lock, a leaf: a client calls in with or without its own locks held, and
// nothing calls back.
package hooks
