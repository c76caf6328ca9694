#!/bin/sh
# How long a running client's share takes to its link, and a link to a
# fetched file through another running client, on the README's network
# (three servers on loopback, default parameters). Usage:
#   sh scripts/waits.sh [riffle binary] [file size in bytes] [runs]
# Prints one line per run: share→link and link→fetched, in seconds.
set -eu
BIN=${1:-bin/riffle}
SIZE=${2:-3000000}
RUNS=${3:-3}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
D=$(mktemp -d)
PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$D"; }
trap cleanup EXIT INT TERM
bg() { "$@" >"$D/log.$$.$(date +%s%N)" 2>&1 & PIDS="$PIDS $!"; }

bg "$BIN" server --data "$D/s1" --nick s1 --listen /ip4/127.0.0.1/tcp/0 --no-mdns
while [ ! -s "$D/s1/addrs" ]; do sleep 0.1; done
S1=$("$BIN" id --data "$D/s1" | sed -n 2p)
bg "$BIN" server --data "$D/s2" --nick s2 --listen /ip4/127.0.0.1/tcp/0 --peer "$S1" --no-mdns
bg "$BIN" server --data "$D/s3" --nick s3 --listen /ip4/127.0.0.1/tcp/0 --peer "$S1" --no-mdns
# Two running clients: alice shares, bob fetches; both stay.
bg "$BIN" client --server "$S1" --data "$D/alice" --min-anonymity 2
bg "$BIN" client --server "$S1" --data "$D/bob" --min-anonymity 2
while [ ! -S "$D/alice/control.sock" ] || [ ! -S "$D/bob/control.sock" ]; do sleep 0.1; done
i=1
while [ "$i" -le "$RUNS" ]; do
	head -c "$SIZE" /dev/urandom >"$D/file.$i"
	t0=$(date +%s.%N)
	LINK=$("$BIN" share --quiet --data "$D/alice" "$D/file.$i")
	t1=$(date +%s.%N)
	"$BIN" get --quiet --data "$D/bob" -o "$D/copy.$i" "$LINK" >/dev/null
	t2=$(date +%s.%N)
	cmp "$D/file.$i" "$D/copy.$i"
	echo "run $i: $SIZE bytes: $(awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "share→link %.1f s, link→fetched %.1f s", b - a, c - b }')"
	i=$((i + 1))
done
