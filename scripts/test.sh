#!/bin/sh
# The test suite of `make test`, in three streams side by side.
#
# Most of the suite's time goes to waiting: the end-to-end tests of node
# wait out epochs and round deadlines on loopback and use little CPU. Run
# one after the other they take about 16 minutes on a 2-core machine; in
# three streams, each running its packages one at a time (-p 1), about
# 10 minutes. The long tests of node (LONG below, about half of its time)
# form one stream, the rest of node another, every other package and the
# race pass of store and pir the third; node's race pass is split among
# the three (LONG, RACE2 and the rest) so that the streams end together.
#
# Each stream writes a log; the logs are printed when every stream is
# done, a failing stream's last, and the script fails if any stream did.
# `make test-serial` runs the same tests one stream after another.
#
# Usage: scripts/test.sh GO RACE_SKIP
set -u
GO=${1:-go}
RACE_SKIP=${2:-}
LONG='^(TestAdversaryLinks|TestRefusalBudget|TestEndToEnd|TestLongJobPauses|TestLocalWorkDoesNotDelay|TestVoidRoundNotResent|TestCastServerSwaps|TestChurn|TestRoundBlameClientMAC|TestCastWithholdsPublication|TestAllowServer|TestAdversarySpoiledAnswers|TestAdversaryIndexGap)$'
RACE2='^(TestCastBadShuffleProof|TestRoundBlameMissingEntry|TestRoundBlameFalseAccusation|TestRoundBlameServerCorrupts|TestIndexGapDetected|TestRoundBlameEquivocation|TestVoidRoundGoesOn|TestCorruptedAnswersChangeNoRequest|TestRoundBlameSecondOnion|TestGetTakesManifestsFromIndex|TestPrivateShareSealedIndex)$'
RSKIP="$LONG|$RACE2"
if [ -n "$RACE_SKIP" ]; then
	RSKIP="$RACE_SKIP|$RSKIP"
fi
others=$($GO list ./... | grep -v '/node$')

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

stream() { # name, commands...
	name=$1
	shift
	(
		start=$(date +%s)
		status=0
		for cmd in "$@"; do
			echo "== $cmd" >>"$logs/$name.log"
			sh -c "$cmd" >>"$logs/$name.log" 2>&1 || status=1
		done
		echo "== stream $name: $(($(date +%s) - start)) s, status $status" >>"$logs/$name.log"
		echo $status >"$logs/$name.status"
	) &
}

stream node-long \
	"$GO test -count=1 -p 1 -run '$LONG' ./node/" \
	"$GO test -count=1 -p 1 -race -short -run '$LONG' -skip '$RACE_SKIP' ./node/"
stream node-rest \
	"$GO test -count=1 -p 1 -skip '$LONG' ./node/" \
	"$GO test -count=1 -p 1 -race -short -run '$RACE2' -skip '$RACE_SKIP' ./node/"
stream others \
	"$GO test -count=1 -p 1 $(echo $others)" \
	"$GO test -count=1 -p 1 -race -short ./store/... ./pir/..." \
	"$GO test -count=1 -p 1 -race -short -skip '$RSKIP' ./node/"
wait

failed=0
for name in node-long node-rest others; do
	if [ "$(cat "$logs/$name.status" 2>/dev/null)" = 0 ]; then
		grep -E '^(==|ok|---|FAIL|panic)' "$logs/$name.log"
	else
		failed=1
	fi
done
for name in node-long node-rest others; do
	if [ "$(cat "$logs/$name.status" 2>/dev/null)" != 0 ]; then
		echo "== stream $name failed; its whole log:"
		cat "$logs/$name.log"
	fi
done
exit $failed
