// SPDX-License-Identifier: BSD-3-Clause
/*
 * Random frame loss for fault-injection tests: an XDP program for the
 * receiving veth that drops DROP_PERMILLE frames out of 1000, at random,
 * and passes the rest.
 *
 * Section "xdp.frags" marks the program as multi-buffer aware
 * (BPF_F_XDP_HAS_FRAGS); without it the kernel refuses to attach it to a
 * device whose MTU (9000 here) does not fit in one page.  The program never
 * reads the packet, so fragmented frames need nothing else.
 *
 * Build (scripts/netns.sh drop does it for you):
 *   clang -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu \
 *         -DDROP_PERMILLE=100 -c xdp_drop.c -o xdp_drop_100.o
 * Attach:
 *   ip link set dev IFACE xdpdrv obj xdp_drop_100.o sec xdp.frags
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#ifndef DROP_PERMILLE
#define DROP_PERMILLE 0
#endif

#if DROP_PERMILLE < 0 || DROP_PERMILLE > 1000
#error "DROP_PERMILLE must be within 0..1000"
#endif

SEC("xdp.frags")
int xdp_drop(struct xdp_md *ctx)
{
	if (bpf_get_prandom_u32() % 1000 < DROP_PERMILLE)
		return XDP_DROP;
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual BSD/GPL";
