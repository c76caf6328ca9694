package wire

import (
	"strings"
	"testing"
)

// TestCertStructure: the decoder takes only certificates of a known kind,
// with a sorted chain, signature positions ascending within it, an abort
// exactly for the abort kind, a digest only for the final kind, and no
// field at all for kind none; pages hold ascending numbers, at most
// MaxCertPage.
func TestCertStructure(t *testing.T) {
	for _, k := range []uint8{CertNone, CertFinal, CertAbort, CertTimeout} {
		c := vectorCert(k)
		var got Cert
		if err := got.Unmarshal(c.Marshal()); err != nil {
			t.Fatalf("kind %d: %v", k, err)
		}
	}
	bad := map[string]func(c *Cert){
		"unknown kind":        func(c *Cert) { c.Kind = 4 },
		"number 0":            func(c *Cert) { c.Number = 0 },
		"unsorted chain":      func(c *Cert) { c.Chain[0], c.Chain[1] = c.Chain[1], c.Chain[0] },
		"repeated peer":       func(c *Cert) { c.Chain[1] = c.Chain[0] },
		"position past chain": func(c *Cert) { c.Sigs[2].Index = 3 },
		"positions unordered": func(c *Cert) { c.Sigs[0], c.Sigs[1] = c.Sigs[1], c.Sigs[0] },
		"repeated position":   func(c *Cert) { c.Sigs[1].Index = 0 },
		"final with an abort": func(c *Cert) { c.Abort = []byte{1} },
		"timeout with digest": func(c *Cert) { c.Kind = CertTimeout },
	}
	for name, f := range bad {
		c := vectorCert(CertFinal)
		f(&c)
		var got Cert
		if err := got.Unmarshal(c.Marshal()); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	a := vectorCert(CertAbort)
	a.Abort = nil
	if err := new(Cert).Unmarshal(a.Marshal()); err == nil {
		t.Error("an abort certificate without its abort decoded")
	}
	none := vectorCert(CertNone)
	none.Number = 1
	if err := new(Cert).Unmarshal(none.Marshal()); err == nil {
		t.Error("an empty certificate with a number decoded")
	}
	page := Certs{Certs: []Cert{vectorCert(CertFinal), vectorCert(CertTimeout)}}
	if err := new(Certs).Unmarshal(page.Marshal()); err == nil || !strings.Contains(err.Error(), "ascending") {
		t.Errorf("a page with a repeated number: %v", err)
	}
	big := Certs{Certs: make([]Cert, MaxCertPage+1)}
	for i := range big.Certs {
		big.Certs[i] = vectorCert(CertTimeout)
		big.Certs[i].Number = uint64(i + 1)
	}
	if err := new(Certs).Unmarshal(big.Marshal()); err == nil {
		t.Error("a page over MaxCertPage decoded")
	}
	if n := len(big.Certs[0].Marshal()); n > MaxCertSize {
		t.Errorf("a certificate of %d bytes over MaxCertSize", n)
	}
}
