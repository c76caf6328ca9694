package node

// testParams keep end-to-end tests fast: 16 KiB chunks, 2 request slots.
func testParams(R int) Params {
	return Params{ChunkSize: 16 << 10, K: 2, W: 2, Rounds: uint32(R), MaxClients: MinClientCap, MaxRows: 64, RegWindowMs: 300, RoundLimitMs: 20000}
}
