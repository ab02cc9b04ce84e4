#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration test over DPDK on a "real" network: each process in a network
# namespace of its own, joined by veth pairs to a Linux bridge in a hub
# namespace. ina-switch owns its veth through net_af_packet (10.77.0.1
# belongs to the DPDK switch, not to a kernel); three DPDK ina-host processes
# own one veth each; a fourth ina-host runs on kernel UDP from 10.77.0.5.
# (One namespace per DPDK process: net_af_packet derives its PACKET_FANOUT
# group id from pid and ifindex, and two processes in one namespace can
# collide, "could not set PACKET_FANOUT ... Invalid argument".) Before the job, ping and arping
# from the kernel side must get answers from the DPDK switch; then every sum
# must verify and every worker hold the same bits, and the DPDK hosts'
# reports must say "dpdk", the kernel host's "udp".
# Skips (77) with the reason when not root, without `ip netns`, veth or a
# bridge, or when DPDK cannot start, unless INA_REQUIRE_DPDK=1 (CI).
# Usage: dpdk_veth.sh BUILD_DIR [extra ina-host args...]
set -euo pipefail
build=$1
shift
world=4
dpdk_hosts=3
tag=ina-v$$
prefixes=("$tag-probe" "$tag-sw")
for ((r = 0; r < dpdk_hosts; r++)); do prefixes+=("$tag-h$r"); done
nss=()
. "$(dirname "$0")/lib.sh"
lib_init
lib_at_exit() {
    # Deleting a namespace deletes its veths (and their peers) and the bridge.
    for n in "${nss[@]}"; do ip netns del "$n" 2>/dev/null || true; done
    for p in "${prefixes[@]}"; do rm -rf "/var/run/dpdk/$p"; done
}

. "$(dirname "$0")/dpdk_lib.sh"
[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces and veth pairs"
command -v ip >/dev/null || skip "no ip command (iproute2)"
for t in ping arping ethtool jq; do
    command -v $t >/dev/null || { echo "FAIL: $t is missing (scripts/deps installs it)"; exit 1; }
done
# mkns NAME: a namespace $tag-NAME with IPv6 off (no router or MLD noise).
mkns() {
    ip netns add "$tag-$1" 2>"$tmp/err" || skip "ip netns add failed: $(cat "$tmp/err")"
    nss+=("$tag-$1")
    ip netns exec "$tag-$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
        net.ipv6.conf.default.disable_ipv6=1
    ip -n "$tag-$1" link set lo up
}
mkns hub
ip -n "$tag-hub" link add br0 type bridge 2>"$tmp/err" || skip "no bridge: $(cat "$tmp/err")"
# br_netfilter, where loaded, would hand bridged IPv4 frames to iptables.
ip netns exec "$tag-hub" sysctl -qw net.bridge.bridge-nf-call-iptables=0 2>/dev/null || true
ip -n "$tag-hub" link set br0 up
# node NAME: namespace $tag-NAME holding veth NAME, whose peer NAME-br is in br0.
node() {
    mkns "$1"
    ip -n "$tag-hub" link add "$1-br" type veth peer name "$1" netns "$tag-$1" 2>"$tmp/err" ||
        skip "no veth: $(cat "$tmp/err")"
    ip -n "$tag-hub" link set "$1-br" master br0
    ip -n "$tag-hub" link set "$1-br" up
    ip -n "$tag-$1" link set "$1" up
}
node sw
ip -n "$tag-sw" link set sw address 02:00:0a:4d:00:01
for ((r = 0; r < dpdk_hosts; r++)); do node "h$r"; done
node kern
ip -n "$tag-kern" addr add 10.77.0.5/24 dev kern
# veth leaves the UDP checksum to an offload that never happens when the frame
# goes to a packet socket: make the kernel host send real checksums.
ip netns exec "$tag-kern" ethtool -K kern tx off >/dev/null
ip netns exec "$tag-hub" ethtool -K kern-br tx off >/dev/null 2>&1 || true
in_kern() { ip netns exec "$tag-kern" "$@"; }

eal=(--no-huge -m 256 --no-pci --no-telemetry --no-shconf --log-level=lib.eal:warning)
probe_eal "$build/switch_sim/ina-switch" "$tag-probe" "${eal[@]}"

export INA_JOB_TOKEN="dpdk-veth-$$"
af="framecnt=4096,qdisc_bypass=1"
# Background processes run through ip netns exec itself (it execs the program),
# never through a shell function, so that $! is the program's pid.
ip netns exec "$tag-sw" "$build/switch_sim/ina-switch" "${eal[@]}" --file-prefix="$tag-sw" -l 1 \
    "--vdev=net_af_packet0,iface=sw,$af" \
    -- --port "dpdk:port=0,ip=10.77.0.1,link_wait_ms=5000" --log-level info \
    >"$tmp/switch.log" 2>&1 &
sw=$!
pids+=("$sw")
wait_serving "$sw"

fail=0
# The DPDK switch answers ARP and ping like any host on the segment.
if in_kern arping -c 3 -w 5 -I kern 10.77.0.1 >"$tmp/arping.log" 2>&1; then
    echo "ok   arping: $(grep -m1 -i 'reply' "$tmp/arping.log")"
else
    echo "FAIL arping 10.77.0.1:"; cat "$tmp/arping.log"; fail=1
fi
if in_kern ping -c 3 -i 0.2 -W 2 -I kern 10.77.0.1 >"$tmp/ping.log" 2>&1; then
    echo "ok   ping: $(grep -m1 'packets transmitted' "$tmp/ping.log")"
else
    echo "FAIL ping 10.77.0.1:"; cat "$tmp/ping.log"; fail=1
fi

hosts=()
for ((r = 0; r < dpdk_hosts; r++)); do
    ip netns exec "$tag-h$r" timeout 120 "$build/host/ina-host" "${eal[@]}" --file-prefix="$tag-h$r" -l 0 \
        "--vdev=net_af_packet0,iface=h$r,$af" \
        -- --port "dpdk:port=0,ip=10.77.0.$((r + 2)),link_wait_ms=5000" \
        --switch 10.77.0.1:9150 --job 7 --rank "$r" --world "$world" \
        --report "$tmp/r$r.json" --quiet --log-level warn "$@" >"$tmp/h$r.log" 2>&1 &
    hosts+=("$!")
    pids+=("$!")
done
# The kernel-UDP host: its own address on the bridge, ARP by the kernel.
ip netns exec "$tag-kern" timeout 120 "$build/host/ina-host" --port udp --switch 10.77.0.1:9150 --job 7 \
    --rank "$dpdk_hosts" --world "$world" --report "$tmp/r$dpdk_hosts.json" --quiet \
    --log-level warn "$@" >"$tmp/h$dpdk_hosts.log" 2>&1 &
hosts+=("$!")
pids+=("$!")
wait_hosts "${hosts[@]}"
stop_switch "$sw"
for ((r = 0; r < dpdk_hosts; r++)); do check_report $r dpdk; done
check_report $dpdk_hosts udp
[ $fail -eq 0 ] && check_same_bits
jq -c '{rank, transport, rounds, verified, retransmits, seconds}' "$tmp"/r*.json || true
if [ $fail -ne 0 ]; then
    echo "--- switch log"; cat "$tmp/switch.log"; exit 1
fi
echo "1 passed, 0 failed: dpdk af_packet on veth, $dpdk_hosts DPDK hosts + 1 kernel-UDP host"
