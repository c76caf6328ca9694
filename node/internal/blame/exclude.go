package blame

// Exclusion after a blame (docs/protocol.md §8 "After a blame"): a culprit
// client, by peer id and address at its primary or by long-term key at
// every server, is refused for a number of epochs that doubles on each
// repeat.

// ExcludeEpochs is how many following epochs a first strike refuses.
const ExcludeEpochs = 1

// MaxExcludeShift caps the doubling: at most 2^10 epochs.
const MaxExcludeShift = 10

// ExcludedUntil is until which epoch number a record refuses once its
// strikes-th strike (strikes ≥ 1) came in epoch number: ExcludeEpochs·2^
// (strikes−1) epochs after number, the shift capped at MaxExcludeShift,
// never before until, the end the record held already.
func ExcludedUntil(strikes uint32, until, number uint64) uint64 {
	shift := min(int(strikes)-1, MaxExcludeShift)
	return max(until, number+uint64(ExcludeEpochs)<<shift)
}
