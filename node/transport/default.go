package transport

// DefaultNetwork carries the streams of a server or client whose
// configuration names no network: libp2p. Tests in virtual time give each
// server and client the in-memory network of their bubble in its
// configuration instead (node's export_test.go guards this one).
var DefaultNetwork Network = Libp2p{}
