// Package mix is the cryptography of riffle's hybrid shuffle (§2, §4,
// §5.1–5.2 and the proofs of §8): ElGamal over ristretto255 with Schnorr and
// Chaum–Pedersen proofs, the per-server epoch setup of §4.2 (version 2:
// open, shuffle, then strip), the per-round layer keys, the onions
// (AES-256-CTR then GMAC, two keys per layer and round), the payload format
// with pseudonym signatures, and the proofs that blame needs. The proof of
// shuffle itself is the sub-package mix/shuffle (§4.3).
//
// Map of the exported API to docs/protocol.md (step numbers are §4.2's and §8's):
//
//	§3   NewServerSecret, ServerSecret.Public, .ProveKey, VerifyKey, KeyContext
//	     (the PoK of x_j bound to number, nonce and peer id); NewRoundKeys,
//	     RoundKeys.Public (Y_{s,r}, Y'_{s,r}); every .Close (forward secrecy)
//	§4   AggregateKeys (A_{s,j}, the pseudonym under A_{s,m-1}),
//	     CheckAggregateKeys (no A_{s,j} is the identity; v3)
//	§4.1 Register, VerifyRegistration, VerifyRegistrations (batched),
//	     CheckDistinct, Registration.MarshalBinary, ParseRegistration,
//	     RegistrationSize, Registration.CiphertextHash, InitialVectors,
//	     ClientSecret.Pseudonym, .PIRKey (§6.2's X25519 key), SealComponent;
//	     a repeated U or P (v3): ClientSecret.Share, .ProveShare, VerifyShare
//	     (proof of knowledge of the value's discrete log, bound to epoch,
//	     slot and component)
//	§4.2 SetupStep: step 1 (open U), step 2 (shuffle, mix/shuffle), step 3
//	     (strip), one batched DLEQ for steps 1 and 3 (§4.4); VerifyStep (step
//	     4, every other server); StepResult.Next, .Pseudonyms, MarshalBinary,
//	     ParseStepResult, StepResultSize; StepSecret.Forward (π_s), ShareError
//	     (identity or duplicate U/P aborts setup)
//	§4.2 ServerLayerKeys, ClientSecret.LayerKeys, ShareKey (layer keys e, a),
//	     LayerKey.Close, CloseLayerKeys
//	§5.1 PayloadSize, OnionSize, Payload, EncodePayload, DecodePayload, Seal,
//	     SignSubmission, VerifySubmission
//	§5.2 OpenLayer, OpenLayerInto (reused buffers), MACError, Permute
//	§5.1 PayloadHash, HashPayload, HashPayloads (payload digest D and chunk
//	     id, one pass over the chunk; version 3)
//	§5.3 VerifyPayloads, VerifyPayloadsHashed, VerifyPayload (pseudonym
//	     signatures over D, batched)
//	§8   step 1: StepSecret.ProveRoute, VerifyRoute (ProveReencryption,
//	     VerifyReencryption); step 2 and MAC-failure evidence: ProveRoundKey,
//	     VerifyRoundKey (KeyKind EncKey, MACKey), ShareKey, CheckMAC; step 3:
//	     DecryptLayer
//	all  a whole epoch in one process (Simulate, in the tests).
//
// Conventions. Positions: π_s maps server s's input position p to its output
// position π_s(p) (StepSecret.Forward, Permute: out[π_s(p)] = in[p]); the
// shuffle package's Witness.Pi is the inverse and is converted in one place.
// Components of a client's vector are numbered 0..m, m being the pseudonym;
// server s receives components s..m. Every encoding, tag and transcript is
// fixed in docs/proto-mix.md with test vectors in testdata/. Setup hashes
// the encodings it parsed or produced instead of encoding elements again
// (encoded.go).
//
// Side channels. Provers and every operation on a secret scalar use the
// constant-time calls of the group library; variable-time multi-scalar
// multiplication is used only on public scalars and points (verifiers, and
// the public batching coefficients of the setup DLEQ). Secret scalars are
// compared with the library's constant-time Equal; MAC tags only inside the
// AEAD. Nothing here logs, and every secret-holding type prints and logs as
// its type name only (redact.go).
package mix
