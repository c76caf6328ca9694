#!/bin/sh
# netns.sh: a riffle chain spread over "hosts" that are Linux network
# namespaces on this machine. Each of the 3 servers and each group of
# clients gets its own namespace; a bridge in one more namespace joins
# them. Addresses (10.77.0.0/24) exist only inside these namespaces and
# nothing is attached to the machine's own network namespace, so no
# packet can leave the machine. Each server's link is capped both ways
# with tc tbf at RATE. The clients share a file each, then fetch another
# client's file (riffle bench --servers), and per-client goodput is
# reported. Namespaces and processes are removed on every exit (trap).
#
# Usage: scripts/netns.sh [riffle binary]   (make netns)
# Environment: RIFFLE_NETNS_RATE (tc rate, default 100mbit),
# RIFFLE_NETNS_GROUPS (client namespaces, default 2),
# RIFFLE_NETNS_CLIENTS (clients per group, default 8),
# RIFFLE_NETNS_CHUNK (b in bytes, default 65536),
# RIFFLE_NETNS_ROUNDS (chunks each client shares, default 2).
set -eu

BIN=$(realpath "${1:-bin/riffle}")
RATE=${RIFFLE_NETNS_RATE:-100mbit}
NGROUPS=${RIFFLE_NETNS_GROUPS:-2}
PER=${RIFFLE_NETNS_CLIENTS:-8}
CHUNK=${RIFFLE_NETNS_CHUNK:-65536}
CHUNKS=${RIFFLE_NETNS_ROUNDS:-2}
M=3
# tbf's bucket: large enough for one timer tick at rates up to ~1 Gbit/s,
# small against a round's bytes, so the cap holds over a round.
BURST=128kb

skip() {
	echo "netns: skipped: $*"
	exit 0
}
[ "$(uname -s)" = Linux ] || skip "needs Linux network namespaces"
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, veth, tc)"
command -v ip >/dev/null 2>&1 || skip "needs iproute2 (ip)"
command -v tc >/dev/null 2>&1 || skip "needs tc"
[ -x "$BIN" ] || { echo "netns: no riffle binary at $BIN (make build)" >&2; exit 1; }

# Names unique to this run, so that two runs never collide.
P=rfl$$
BR=${P}br
TMP=$(mktemp -d)
NSES=""
PIDS=""

cleanup() {
	set +e
	for pid in $PIDS; do kill "$pid" 2>/dev/null; done
	for pid in $PIDS; do wait "$pid" 2>/dev/null; done
	for ns in $NSES; do ip netns del "$ns" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

newns() {
	ip netns add "$1" || skip "cannot create a network namespace"
	NSES="$NSES $1"
	ip -n "$1" link set lo up
}

# The bridge's namespace: only the bridge and the far ends of the links.
newns "$BR"
ip -n "$BR" link add name br0 type bridge
ip -n "$BR" link set br0 up

# attach NS IFACE ADDR: a veth from the bridge to NS, named eth0 inside,
# with ADDR/24; IFACE names the bridge's end.
attach() {
	ns=$1 ifc=$2 addr=$3
	newns "$ns"
	ip -n "$BR" link add name "$ifc" type veth peer name "${ifc}p"
	ip -n "$BR" link set "${ifc}p" netns "$ns"
	ip -n "$ns" link set "${ifc}p" name eth0
	ip -n "$ns" addr add "$addr/24" dev eth0
	ip -n "$ns" link set eth0 up
	ip -n "$BR" link set "$ifc" master br0
	ip -n "$BR" link set "$ifc" up
}

TOTAL=$((NGROUPS * PER))
R=$((2 * CHUNKS + CHUNKS + 16))
ADDRS=""
for i in $(seq 0 $((M - 1))); do
	ns=${P}s$i
	attach "$ns" "s$i" "10.77.0.1$i"
	# Cap the server's link both ways: its sending side (eth0 in its
	# namespace) and the bridge's port towards it.
	ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$RATE" burst "$BURST" latency 200ms
	ip netns exec "$BR" tc qdisc add dev "s$i" root tbf rate "$RATE" burst "$BURST" latency 200ms
	peers=""
	for a in $ADDRS; do peers="$peers --peer $a"; done
	# shellcheck disable=SC2086 # $peers is a list of flags
	ip netns exec "$ns" "$BIN" server --data "$TMP/s$i" --listen "/ip4/10.77.0.1$i/tcp/4433" --no-mdns \
		--nick "ns$i" --min-servers $M --min-clients "$TOTAL" --chunk-size "$CHUNK" --k 1 --rounds "$R" \
		--reg-window 2s --round-limit 2m $peers >"$TMP/s$i.log" 2>&1 &
	PIDS="$PIDS $!"
	n=0
	until [ -s "$TMP/s$i/addrs" ]; do
		n=$((n + 1))
		[ $n -lt 600 ] || { echo "netns: server $i did not start:" >&2; tail -5 "$TMP/s$i.log" >&2; exit 1; }
		sleep 0.1
	done
	ADDRS="$ADDRS $(grep '^/ip4/10.77.0.1' "$TMP/s$i/addrs" | head -1)"
done
LIST=$(echo $ADDRS | tr ' ' ',')

echo "netns: $M servers (10.77.0.10-12), each link capped at $RATE both ways by tc tbf; $NGROUPS client namespaces of $PER clients; b = $CHUNK B, $CHUNKS chunks each"
CPIDS=""
for g in $(seq 0 $((NGROUPS - 1))); do
	ns=${P}c$g
	attach "$ns" "c$g" "10.77.0.$((100 + g))"
	ip netns exec "$ns" "$BIN" bench --servers "$LIST" --clients "$PER" --rounds "$CHUNKS" >"$TMP/c$g.out" 2>"$TMP/c$g.err" &
	CPIDS="$CPIDS $!"
done
fail=0
for pid in $CPIDS; do wait "$pid" || fail=1; done
for g in $(seq 0 $((NGROUPS - 1))); do
	echo "netns: client group $g (10.77.0.$((100 + g))):"
	sed 's/^/  /' "$TMP/c$g.out"
	[ -s "$TMP/c$g.err" ] && sed 's/^/  /' "$TMP/c$g.err"
done
[ $fail = 0 ] || { echo "netns: a client group failed" >&2; exit 1; }
echo "netns: per-client goodput above at $RATE per server link ($TOTAL clients in all)"
