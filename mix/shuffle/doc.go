// Package shuffle is riffle's verifiable shuffle of ElGamal ciphertext
// vectors (§4.2 step 2 and §4.3): a server permutes n vectors of w
// ciphertexts with one secret permutation, re-randomises every component
// under that component's own key, and proves it with the Terelius–Wikström
// proof of a shuffle in commitment form, made non-interactive with
// Fiat–Shamir, exactly as docs/proto-shuffle.md writes it out step by step
// (its § numbers are the ones cited in this package): generators of
// docs/protocol.md §2 (group.Generators), tags "riffle/v2/shuffle/…", u32
// framing, and a u32 n, w proof header.
//
// Conventions. Witness.Pi[i] is the INPUT position of OUTPUT i (the note's
// π, Haenni et al.'s ψ); Witness.R[i][j] is the re-encryption scalar of output
// i, component j. §4.2 writes the other direction, π_s: input p → output
// π_s(p); InputToOutput converts, through Invert, the one conversion function.
//
// Side channels. The prover (Shuffle, Prove) uses only the constant-time
// calls of the group library on secrets and never a VarTime call, math/big or
// math/rand (a test parses the sources to enforce it). It reads and writes
// memory at secret indices when it applies π (outputs[i] = inputs[π(i)],
// C_{π(i)}, u_{π(i)}): a cache-timing attacker co-resident on the server's
// machine is out of scope, an accepted risk written down in
// docs/proto-shuffle.md. The verifier works on public data only and uses
// batched, chunked variable-time multi-scalar multiplication.
package shuffle
