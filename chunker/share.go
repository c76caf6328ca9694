package chunker

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
)

// ShareOptions are the options of Share.
type ShareOptions struct {
	// Encrypt shares privately: the file is encrypted under a fresh random
	// key that is returned only in the Link, and the public manifest shows
	// EncryptedName and EncryptedMediaType in place of the real ones.
	Encrypt bool
	// Rand is the source of the file key; crypto/rand when nil. Tests
	// inject a deterministic reader.
	Rand io.Reader
}

// EmitFunc receives one chunk and its id. The chunk's bytes are valid only
// during the call (Share reuses its buffers): copy them to keep them.
type EmitFunc func(id ID, chunk []byte) error

// Share cuts the stream r into chunks of chunkSize bytes (encrypting it
// first if opts.Encrypt) and passes each to emit: the data chunks in file
// order, then the manifest's continuation nodes level by level, then the
// root manifest last. It holds two chunks and the list of ids in memory,
// never the file. name and mediaType are sanitised (SanitizeName,
// NormalizeMediaType). It returns the file's link; for an encrypted file
// the link carries the key, which nothing else records.
func Share(r io.Reader, name, mediaType string, chunkSize int, opts ShareOptions, emit EmitFunc) (Link, error) {
	if err := checkChunkSize(chunkSize); err != nil {
		return Link{}, fmt.Errorf("riffle: share: %w", err)
	}
	name, mediaType = SanitizeName(name), NormalizeMediaType(mediaType)
	var (
		link Link
		fc   *fileCipher
		ids  []ID
		size int64
		err  error
	)
	if opts.Encrypt {
		src := opts.Rand
		if src == nil {
			src = rand.Reader
		}
		link.Key = new(FileKey)
		if _, err := io.ReadFull(src, link.Key[:]); err != nil {
			return Link{}, fmt.Errorf("riffle: share: draw file key: %w", err)
		}
		if fc, err = newFileCipher(link.Key); err != nil {
			return Link{}, fmt.Errorf("riffle: share: %w", err)
		}
		ids, size, err = splitEncrypted(r, chunkSize, fc, emit)
	} else {
		ids, size, err = splitPlain(r, chunkSize, emit)
	}
	if err != nil {
		return Link{}, fmt.Errorf("riffle: share %q: %w", name, err)
	}
	root := &Manifest{Root: true, ChunkSize: chunkSize, Name: name, MediaType: mediaType,
		Size: size, NumChunks: len(ids)}
	if fc != nil {
		root.Scheme, root.Sealed = SchemeStream, true
		root.Name, root.MediaType = EncryptedName, EncryptedMediaType
		root.SealedMeta = fc.sealMeta(name, mediaType, chunkSize, size, len(ids))
	}
	if link.ID, err = emitTree(root, ids, fc, emit); err != nil {
		return Link{}, fmt.Errorf("riffle: share %q: %w", name, err)
	}
	return link, nil
}

// errTooManyChunks is returned when a stream exceeds MaxChunks chunks.
func errTooManyChunks(b int) error {
	return fmt.Errorf("file exceeds %d chunks of %d bytes (%d bytes)", MaxChunks, b, int64(MaxChunks)*int64(b))
}

// readSegment fills buf from r as far as the stream goes; eof reports that
// the stream ended within (or right at the end of) the read.
func readSegment(r io.Reader, buf []byte) (n int, eof bool, err error) {
	n, err = io.ReadFull(r, buf)
	switch {
	case err == nil:
		return n, false, nil
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return n, true, nil
	}
	return n, false, fmt.Errorf("read at chunk boundary: %w", err)
}

func splitPlain(r io.Reader, b int, emit EmitFunc) ([]ID, int64, error) {
	buf := make([]byte, b)
	var ids []ID
	var size int64
	for {
		n, eof, err := readSegment(r, buf)
		if err != nil {
			return nil, 0, err
		}
		if n > 0 {
			if len(ids) == MaxChunks {
				return nil, 0, errTooManyChunks(b)
			}
			id := Sum(buf[:n])
			if err := emit(id, buf[:n]); err != nil {
				return nil, 0, fmt.Errorf("emit data chunk %d: %w", len(ids), err)
			}
			ids = append(ids, id)
			size += int64(n)
		}
		if eof {
			return ids, size, nil
		}
	}
}

// splitEncrypted seals segments of b-tagSize bytes, so that every sealed
// segment is exactly one chunk of b bytes (the last one shorter). It reads
// one segment ahead to know which one is last; an empty stream still gives
// one sealed empty segment, so that emptiness is authenticated too.
func splitEncrypted(r io.Reader, b int, fc *fileCipher, emit EmitFunc) ([]ID, int64, error) {
	seg := b - tagSize
	cur, next := make([]byte, seg), make([]byte, seg)
	out := make([]byte, 0, b)
	var ids []ID
	var size int64
	n, eof, err := readSegment(r, cur)
	for err == nil {
		var m int
		last := eof
		if !last {
			if m, eof, err = readSegment(r, next); err != nil {
				break
			}
			last = m == 0
		}
		if len(ids) == MaxChunks {
			return nil, 0, errTooManyChunks(b)
		}
		out = fc.sealSegment(out[:0], cur[:n], uint64(len(ids)), last)
		id := Sum(out)
		if err := emit(id, out); err != nil {
			return nil, 0, fmt.Errorf("emit data chunk %d: %w", len(ids), err)
		}
		ids = append(ids, id)
		size += int64(len(out))
		if last {
			clear(cur)
			clear(next)
			return ids, size, nil
		}
		cur, next, n = next, cur, m
	}
	clear(cur)
	clear(next)
	return nil, 0, err
}

// emitTree builds the canonical manifest tree over ids (docs/proto-chunker.md:
// level ℓ packs level ℓ-1 into full nodes), emits its nodes level by level
// and the root last, and returns the root's id. With fc (a private file)
// every manifest chunk is sealed at its position (sealed.go).
func emitTree(root *Manifest, ids []ID, fc *fileCipher, emit EmitFunc) (ID, error) {
	b := root.ChunkSize
	sealed := fc != nil
	levels, err := treeLevels(len(ids), nodeCap(b, sealed), rootCap(b, sealed, root.Name, root.MediaType, len(root.SealedMeta)))
	if err != nil {
		return ID{}, err
	}
	cur := ids
	capN := nodeCap(b, sealed)
	encode := func(m *Manifest, idx int) ([]byte, error) {
		if sealed {
			return fc.sealManifest(m, idx)
		}
		return m.Encode()
	}
	for level := 1; level < len(levels); level++ {
		next := make([]ID, 0, levels[level])
		for off := 0; off < len(cur); off += capN {
			node := &Manifest{ChunkSize: b, Level: level, Sealed: sealed}
			part := cur[off:min(off+capN, len(cur))]
			if level == 1 {
				node.Chunks = part
			} else {
				node.Continuations = part
			}
			enc, err := encode(node, len(next))
			if err != nil {
				return ID{}, err
			}
			id := Sum(enc)
			if err := emit(id, enc); err != nil {
				return ID{}, fmt.Errorf("emit manifest node %d of level %d: %w", len(next), level, err)
			}
			next = append(next, id)
		}
		cur = next
	}
	root.Depth = len(levels) - 1
	if root.Depth == 0 {
		root.Chunks = cur
	} else {
		root.Continuations = cur
	}
	enc, err := encode(root, 0)
	if err != nil {
		return ID{}, err
	}
	id := Sum(enc)
	if err := emit(id, enc); err != nil {
		return ID{}, fmt.Errorf("emit root manifest: %w", err)
	}
	return id, nil
}
