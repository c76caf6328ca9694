package proto

import "time"

// The checkpoint rounds of an epoch (§6.4 v3, "Checkpoints"; the
// client's syncs are checkpoint.go in package node/client).

const (
	// CheckpointEvery spaces the checkpoints, in rounds (a constant of
	// the software, the same for every client).
	CheckpointEvery = 16
	// CheckpointSyncTime bounds one checkpoint's sync: the primary, then
	// every other chain server at once, half each.
	CheckpointSyncTime = 16 * time.Second
	// CheckpointSlack is the lag's time beyond the sync's deadline: the
	// sync is over before the checkpoint looks at it.
	CheckpointSlack = 2 * time.Second
)

// CheckpointLag is the rounds between the last list a checkpoint's
// manifests come from and the checkpoint: the sync's time at the group's
// pace (no honest server runs rounds faster, pace.go), one round for the
// servers to store what the list names, one between the sync's start and
// the checkpoint, and W for a primary that hands its client the lists in
// a burst (it can hold them back no more than W rounds: the next rounds
// need the onions the client sends only once it holds them).
func CheckpointLag(intervalMs, W uint32) uint32 {
	iv := time.Duration(max(intervalMs, 1)) * time.Millisecond
	return uint32((CheckpointSyncTime+CheckpointSlack+iv-1)/iv) + 2 + W
}

// Checkpoints returns the checkpoint rounds of an epoch of R rounds at a
// pace of intervalMs: the multiples of CheckpointEvery in (lag, R).
func Checkpoints(R, intervalMs, W uint32) []uint32 {
	lag := CheckpointLag(intervalMs, W)
	var out []uint32
	for q := uint32(CheckpointEvery); q < R; q += CheckpointEvery {
		if q > lag {
			out = append(out, q)
		}
	}
	return out
}
