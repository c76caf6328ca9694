package store

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestLayoutMeasure compares bbolt layouts and options for 256 KiB chunk
// values: the file size against the live payload after a publish / prune /
// publish cycle, and the write time. It is the measurement behind the
// choices in Open and docs/proto-store.md; run it with RIFFLE_LONG=1 -v.
func TestLayoutMeasure(t *testing.T) {
	if os.Getenv("RIFFLE_LONG") != "1" {
		t.Skip("measurement: set RIFFLE_LONG=1")
	}
	const (
		chunk   = 256 << 10
		nChunks = 480
		perTx   = 8
	)
	type variant struct {
		name     string
		nested   bool
		pageSize int
		freelist bolt.FreelistType
		noFLSync bool
	}
	var vs []variant
	for _, nested := range []bool{false, true} {
		for _, ps := range []int{4096, 16384, 65536} {
			vs = append(vs, variant{fmt.Sprintf("nested=%v/page=%d/map/nofreelistsync", nested, ps), nested, ps, bolt.FreelistMapType, true})
		}
	}
	vs = append(vs,
		variant{"nested=true/page=4096/array/freelistsync", true, 4096, bolt.FreelistArrayType, false},
		variant{"nested=true/page=4096/map/freelistsync", true, 4096, bolt.FreelistMapType, false},
		variant{"nested=true/page=8192/map/freelistsync", true, 8192, bolt.FreelistMapType, false},
		variant{"nested=true/page=4096/map/nofreelistsync(again)", true, 4096, bolt.FreelistMapType, true},
		variant{"nested=true/page=4096/map/freelistsync(again)", true, 4096, bolt.FreelistMapType, false},
	)
	data := make([][]byte, nChunks*2)
	for i := range data {
		data[i] = make([]byte, chunk-(i%3)*1000) // mostly full chunks, some shorter
		rand.Read(data[i])
	}
	for _, v := range vs {
		path := filepath.Join(t.TempDir(), "m.db")
		db, err := bolt.Open(path, 0o600, &bolt.Options{PageSize: v.pageSize, FreelistType: v.freelist, NoFreelistSync: v.noFLSync, InitialMmapSize: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		put := func(from, to int) time.Duration {
			start := time.Now()
			for i := from; i < to; i += perTx {
				err := db.Update(func(tx *bolt.Tx) error {
					b, err := tx.CreateBucketIfNotExists([]byte("c"))
					if err != nil {
						return err
					}
					for j := i; j < i+perTx && j < to; j++ {
						id := sha256.Sum256(data[j])
						if v.nested {
							sb, err := b.CreateBucket(id[:])
							if err != nil {
								return err
							}
							if err := sb.Put([]byte{'d'}, data[j]); err != nil {
								return err
							}
						} else if err := b.Put(id[:], data[j]); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			return time.Since(start)
		}
		live := int64(0)
		d1 := put(0, nChunks)
		for i := 0; i < nChunks; i++ {
			live += int64(len(data[i]))
		}
		// Prune every third chunk, then publish as many new ones again.
		if err := db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte("c"))
			for i := 0; i < nChunks; i += 3 {
				id := sha256.Sum256(data[i])
				var err error
				if v.nested {
					err = b.DeleteBucket(id[:])
				} else {
					err = b.Delete(id[:])
				}
				if err != nil {
					return err
				}
				live -= int64(len(data[i]))
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		d2 := put(nChunks, nChunks+nChunks/3)
		for i := nChunks; i < nChunks+nChunks/3; i++ {
			live += int64(len(data[i]))
		}
		var hwm int64
		db.View(func(tx *bolt.Tx) error { hwm = tx.Size(); return nil })
		db.Close()
		st, _ := os.Stat(path)
		start := time.Now()
		db, err = bolt.Open(path, 0o600, &bolt.Options{PageSize: v.pageSize, FreelistType: v.freelist, NoFreelistSync: v.noFLSync})
		if err != nil {
			t.Fatal(err)
		}
		reopen := time.Since(start)
		db.Close()
		n := nChunks + nChunks/3
		t.Logf("%-46s used/payload %.4f file/payload %.4f  write %6.1f MB/s  reopen %v",
			v.name, float64(hwm)/float64(live), float64(st.Size())/float64(live),
			float64(n*chunk)/(d1+d2).Seconds()/1e6, reopen.Round(time.Microsecond))
	}
}
