package pir

import (
	"bytes"
	"crypto/ecdh"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// chunkDB returns L listed chunks of random lengths ≤ b (the store's rows),
// with their ids.
func chunkDB(r *rand.Rand, L, b int) (SliceRows, [][32]byte) {
	db := make(SliceRows, L)
	ids := make([][32]byte, L)
	for i := range db {
		db[i] = make([]byte, 1+r.IntN(b))
		for k := range db[i] {
			db[i][k] = byte(r.Uint32())
		}
		ids[i] = sha256.Sum256(db[i])
	}
	return db, ids
}

// TestProtocol runs §6 end to end on m simulated servers: every client, with
// any server as its primary, sends k queries (real and cover), the servers
// answer with the engine, non-primaries pad, primaries combine, and every
// client recovers exactly its rows and checks them.
func TestProtocol(t *testing.T) {
	for _, m := range []int{2, 3, 5} {
		t.Run(fmt.Sprint("m", m), func(t *testing.T) { testProtocol(t, m) })
	}
}

func testProtocol(t *testing.T, m int) {
	const (
		n     = 7 // clients
		k     = 3 // query slots
		L     = 23
		b     = 300
		round = 17
	)
	r := rand.New(rand.NewPCG(uint64(m), 99))
	var epoch [32]byte
	epoch[3] = byte(m)
	key := func() *ecdh.PrivateKey {
		var s [32]byte
		for i := range s {
			s[i] = byte(r.Uint32())
		}
		p, err := ecdh.X25519().NewPrivateKey(s[:])
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	servers := make([]*ecdh.PrivateKey, m)
	for j := range servers {
		servers[j] = key()
	}
	db, ids := chunkDB(r, L, b)
	coin := rand.NewChaCha8([32]byte{byte(m)})

	type query struct {
		client, slot, row int
		mask              []byte // sent to the primary
	}
	primaryOf := make([]int, n)
	clientKeys := make([][]*Keys, n) // [client][server]
	serverKeys := make([][]*Keys, m) // [server][client]
	for j := range serverKeys {
		serverKeys[j] = make([]*Keys, n)
	}
	byPrimary := make([][]query, m)
	for i := 0; i < n; i++ {
		primaryOf[i] = i % m // every server is someone's primary
		cpriv := key()
		clientKeys[i] = make([]*Keys, m)
		for j := range servers {
			ck, err := ClientKeys(cpriv, epoch, servers[j].PublicKey().Bytes())
			if err != nil {
				t.Fatal(err)
			}
			sk, err := ServerKeys(servers[j], epoch, cpriv.PublicKey().Bytes())
			if err != nil {
				t.Fatal(err)
			}
			clientKeys[i][j], serverKeys[j][i] = ck, sk
		}
		others := otherKeys(clientKeys[i], primaryOf[i])
		for s := 0; s < k; s++ {
			row := r.IntN(L) // a real request
			if s == k-1 {    // the last slot is cover
				var err error
				if row, err = CoverRow(coin, L); err != nil {
					t.Fatal(err)
				}
			}
			mask, err := Query(others, round, uint32(s), L, row)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Query(others, round, uint32(s), L, row)
			if !bytes.Equal(mask, again) {
				t.Fatal("a query sent again is not identical")
			}
			p := primaryOf[i]
			byPrimary[p] = append(byPrimary[p], query{i, s, row, mask})
		}
	}

	e := NewEngine(Options{})
	for p := 0; p < m; p++ {
		qs := byPrimary[p]
		// The primary answers its clients' masks.
		masks := make([][]byte, len(qs))
		for x, q := range qs {
			masks[x] = q.mask
		}
		answers := newOut(len(qs), b, 0)
		if err := e.Answer(db, b, masks, answers); err != nil {
			t.Fatal(err)
		}
		// Every other server derives its own masks, answers and pads.
		for j := 0; j < m; j++ {
			if j == p {
				continue
			}
			ms := make([][]byte, len(qs))
			for x, q := range qs {
				ms[x] = serverKeys[j][q.client].Mask(round, uint32(q.slot), L)
			}
			part := newOut(len(qs), b, 0)
			if err := e.Answer(db, b, ms, part); err != nil {
				t.Fatal(err)
			}
			for x, q := range qs {
				serverKeys[j][q.client].XORPad(round, uint32(q.slot), part[x])
				if bytes.Equal(part[x][:len(db[q.row])], db[q.row]) {
					t.Fatal("a padded answer shows the row")
				}
				if err := Combine(answers[x], part[x]); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Each client removes the pads and checks the whole row.
		for x, q := range qs {
			got := answers[x]
			Unpad(otherKeys(clientKeys[q.client], p), round, uint32(q.slot), got)
			want := append(append([]byte(nil), db[q.row]...), make([]byte, b-len(db[q.row]))...)
			if !bytes.Equal(got, want) {
				t.Fatalf("client %d slot %d (primary %d): wrong row", q.client, q.slot, p)
			}
			if err := CheckRow(got, ids[q.row], len(db[q.row])); err != nil {
				t.Fatalf("client %d slot %d: %v", q.client, q.slot, err)
			}
		}
	}
}

func otherKeys(ks []*Keys, primary int) []*Keys {
	var o []*Keys
	for j, k := range ks {
		if j != primary {
			o = append(o, k)
		}
	}
	return o
}

func TestCheckRow(t *testing.T) {
	row := append([]byte("chunk bytes"), make([]byte, 21)...)
	id := sha256.Sum256(row[:11])
	if err := CheckRow(row, id, 11); err != nil {
		t.Fatal(err)
	}
	// A corrupted padding byte (v2: checked too), first, middle or last.
	for _, at := range []int{11, 20, 31} {
		bad := append([]byte(nil), row...)
		bad[at] = 0x80
		if err := CheckRow(bad, id, 11); !errors.Is(err, ErrBadPadding) {
			t.Errorf("padding byte %d corrupted: %v", at, err)
		}
	}
	bad := append([]byte(nil), row...)
	bad[0] ^= 1
	if err := CheckRow(bad, id, 11); !errors.Is(err, ErrBadRow) {
		t.Errorf("corrupted chunk: %v", err)
	}
	if err := CheckRow(row, id, 12); !errors.Is(err, ErrBadRow) {
		t.Errorf("wrong length: %v", err)
	}
	if err := CheckRow(row, id, 33); !errors.Is(err, ErrSize) {
		t.Errorf("length beyond the row: %v", err)
	}
}

func TestClientSizes(t *testing.T) {
	if _, err := PrimaryMask(5, 5, nil); !errors.Is(err, ErrSize) {
		t.Errorf("row = L: %v", err)
	}
	if _, err := PrimaryMask(-1, 5, nil); !errors.Is(err, ErrSize) {
		t.Errorf("row < 0: %v", err)
	}
	if _, err := PrimaryMask(0, 9, [][]byte{{0}}); !errors.Is(err, ErrSize) {
		t.Errorf("short other mask: %v", err)
	}
	if _, err := PrimaryMask(0, 9, [][]byte{{0, 2}}); !errors.Is(err, ErrMask) {
		t.Errorf("other mask with bits beyond L: %v", err)
	}
	m, err := PrimaryMask(10, 12, [][]byte{{0xff, 0x0f}, {0x0f, 0x01}})
	if err != nil || !bytes.Equal(m, []byte{0xf0, 0x0a}) {
		t.Errorf("PrimaryMask = %x, %v; want f00a", m, err)
	}
	if err := Combine(make([]byte, 4), make([]byte, 4), make([]byte, 3)); !errors.Is(err, ErrSize) {
		t.Errorf("Combine of unequal lengths: %v", err)
	}
	if _, err := CoverRow(rand.NewChaCha8([32]byte{}), 0); !errors.Is(err, ErrSize) {
		t.Errorf("cover row among 0: %v", err)
	}
	if _, err := CoverRow(bytes.NewReader(nil), 3); err == nil {
		t.Error("cover row from an empty reader")
	}
}
