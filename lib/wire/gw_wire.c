/* SPDX-License-Identifier: BSD-3-Clause */
/* gw_wire: frame and record codec; doc/protocol.md has the byte layout. */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "gw_wire.h"

/* Ethernet */
#define ETH_DST 0
#define ETH_SRC 6
#define ETH_TYPE 12
#define ETHERTYPE_IPV4 0x0800

/* IPv4, offsets from the start of the IP header */
#define IP_VHL 0 /* version << 4 | header length in words */
#define IP_TOS 1
#define IP_LEN 2
#define IP_ID 4
#define IP_FRAG 6
#define IP_TTL 8
#define IP_PROTO 9
#define IP_CSUM 10
#define IP_SRC 12
#define IP_DST 16
#define IP_VHL_V4 0x45 /* version 4, 5 words: no options */
#define IP_DF 0x4000
#define IP_MF 0x2000
#define IP_OFFMASK 0x1fff
#define IP_TTL_DEFAULT 64
#define IP_PROTO_UDP 17

/* UDP */
#define UDP_SPORT 0
#define UDP_DPORT 2
#define UDP_LEN 4
#define UDP_CSUM 6

/* gridwire header */
#define GH_MAGIC 0
#define GH_VERSION 2
#define GH_TYPE 3
#define GH_SRC_NODE 4
#define GH_DST_NODE 6
#define GH_LANE 8
#define GH_NREC 10
#define GH_EPOCH 12
#define GH_SEQ 16
#define GH_BASE 20
#define GH_LEN 24
#define GH_CRC 28

/* ACK and HELLO payloads */
#define ACK_EPOCH 0
#define ACK_CUM 4
#define ACK_NBITS 8
#define ACK_GRANT 10
#define ACK_SACK 12
#define HELLO_CAPS 0
#define HELLO_INTERVAL 4
#define HELLO_NAME_LEN 6
#define HELLO_NKEYS 7 /* key ids after the name, 4 bytes each */
#define HELLO_NAME 8

/* IP total length of a frame with no payload; anything shorter is truncated. */
#define IP_LEN_MIN (GW_IP_HLEN + GW_UDP_HLEN + GW_HDR_LEN)

/* Unaligned accessors: payloads start at odd offsets (GW_FRAME_MIN = 74). */
static inline void put_le16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, sizeof(v));
}

static inline void put_be16(uint8_t *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, sizeof(v));
}

static inline uint16_t get_le16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return le16toh(v);
}

static inline uint32_t get_le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static inline uint16_t get_be16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof(v));
	return be16toh(v);
}

static inline uint32_t get_be32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof(v));
	return be32toh(v);
}

/* RFC 1071 checksum of an option-less IPv4 header whose checksum field is 0. */
static uint16_t ip_csum(const uint8_t *ip)
{
	uint32_t sum = 0;
	for (unsigned i = 0; i < GW_IP_HLEN; i += 2)
		sum += get_be16(ip + i);
	sum = (sum & 0xffff) + (sum >> 16);
	sum += sum >> 16;
	return (uint16_t)~sum;
}

size_t gw_wire_seal(uint8_t *frame, const struct gw_addr *src, const struct gw_addr *dst,
		    const struct gw_hdr *hdr)
{
	uint8_t *ip = frame + GW_ETH_HLEN;
	uint8_t *udp = ip + GW_IP_HLEN;
	uint8_t *gh = udp + GW_UDP_HLEN;
	uint16_t ip_len = (uint16_t)(IP_LEN_MIN + hdr->len);

	memcpy(frame + ETH_DST, dst->mac, sizeof(dst->mac));
	memcpy(frame + ETH_SRC, src->mac, sizeof(src->mac));
	put_be16(frame + ETH_TYPE, ETHERTYPE_IPV4);

	ip[IP_VHL] = IP_VHL_V4;
	ip[IP_TOS] = 0;
	put_be16(ip + IP_LEN, ip_len);
	put_be16(ip + IP_ID, 0); /* DF set: the id never identifies fragments */
	put_be16(ip + IP_FRAG, IP_DF);
	ip[IP_TTL] = IP_TTL_DEFAULT;
	ip[IP_PROTO] = IP_PROTO_UDP;
	put_be16(ip + IP_CSUM, 0);
	put_be32(ip + IP_SRC, src->ip);
	put_be32(ip + IP_DST, dst->ip);
	put_be16(ip + IP_CSUM, ip_csum(ip));

	put_be16(udp + UDP_SPORT, src->port);
	put_be16(udp + UDP_DPORT, dst->port);
	put_be16(udp + UDP_LEN, (uint16_t)(ip_len - GW_IP_HLEN));
	put_be16(udp + UDP_CSUM, 0); /* none: the CRC32C covers what we read */

	put_le16(gh + GH_MAGIC, GW_WIRE_MAGIC);
	gh[GH_VERSION] = GW_WIRE_VERSION;
	gh[GH_TYPE] = hdr->type;
	put_le16(gh + GH_SRC_NODE, hdr->src_node);
	put_le16(gh + GH_DST_NODE, hdr->dst_node);
	put_le16(gh + GH_LANE, hdr->lane);
	put_le16(gh + GH_NREC, hdr->nrec);
	put_le32(gh + GH_EPOCH, hdr->epoch);
	put_le32(gh + GH_SEQ, hdr->seq);
	put_le32(gh + GH_BASE, hdr->base);
	put_le32(gh + GH_LEN, hdr->len);
	put_le32(gh + GH_CRC, 0);
	/* The payload follows the header, so one pass covers both. */
	put_le32(gh + GH_CRC, gw_crc32c(0, gh, GW_HDR_LEN + hdr->len));

	return GW_FRAME_MIN + hdr->len;
}

void gw_wire_set_ip_len(uint8_t *frame, uint16_t ip_len)
{
	uint8_t *ip = frame + GW_ETH_HLEN;
	put_be16(ip + IP_LEN, ip_len);
	put_be16(ip + GW_IP_HLEN + UDP_LEN, (uint16_t)(ip_len - GW_IP_HLEN));
	put_be16(ip + IP_CSUM, 0);
	put_be16(ip + IP_CSUM, ip_csum(ip));
}

void gw_wire_set_dscp(uint8_t *frame, uint8_t dscp)
{
	uint8_t *ip = frame + GW_ETH_HLEN;
	ip[IP_TOS] = (uint8_t)(dscp << 2); /* ECN bits 0: not ECN-capable */
	put_be16(ip + IP_CSUM, 0);
	put_be16(ip + IP_CSUM, ip_csum(ip));
}

uint32_t gw_wire_base(const uint8_t *frame)
{
	return get_le32(frame + GW_OUTER_HLEN + GH_BASE);
}

uint16_t gw_wire_nrec(const uint8_t *frame)
{
	return get_le16(frame + GW_OUTER_HLEN + GH_NREC);
}

const uint8_t *gw_wire_sealed_payload(const uint8_t *frame, size_t *len)
{
	*len = get_le32(frame + GW_OUTER_HLEN + GH_LEN);
	return frame + GW_FRAME_MIN;
}

void gw_wire_restamp_base(uint8_t *frame, uint32_t base)
{
	uint8_t *gh = frame + GW_OUTER_HLEN;
	put_le32(gh + GH_BASE, base);
	put_le32(gh + GH_CRC, 0);
	put_le32(gh + GH_CRC, gw_crc32c(0, gh, GW_HDR_LEN + get_le32(gh + GH_LEN)));
}

/* Everything about a frame but its CRC: 0 and the payload length, or a GW_EWIRE_* code. */
static int gw_wire_check(const uint8_t *frame, size_t len, uint16_t port, uint32_t *plen_out)
{
	const uint8_t *ip = frame + GW_ETH_HLEN;
	const uint8_t *udp = ip + GW_IP_HLEN;
	const uint8_t *gh = udp + GW_UDP_HLEN;

	if (len < GW_FRAME_MIN)
		return GW_EWIRE_SHORT;
	/* Fragments are not ours either: we send with DF. */
	if (get_be16(frame + ETH_TYPE) != ETHERTYPE_IPV4 || ip[IP_VHL] != IP_VHL_V4 ||
	    ip[IP_PROTO] != IP_PROTO_UDP || (get_be16(ip + IP_FRAG) & (IP_MF | IP_OFFMASK)) ||
	    get_be16(udp + UDP_DPORT) != port || get_le16(gh + GH_MAGIC) != GW_WIRE_MAGIC)
		return GW_EWIRE_NOTGW;

	/* Frames may carry Ethernet padding after what IP says, never less. */
	size_t ip_len = get_be16(ip + IP_LEN);
	if (ip_len < IP_LEN_MIN || ip_len > len - GW_ETH_HLEN ||
	    ip_len > GW_FRAME_MAX - GW_ETH_HLEN || get_be16(udp + UDP_LEN) != ip_len - GW_IP_HLEN)
		return GW_EWIRE_SHORT;
	uint32_t plen = get_le32(gh + GH_LEN);
	if (plen != ip_len - IP_LEN_MIN)
		return GW_EWIRE_SHORT;

	uint8_t type = gh[GH_TYPE];
	if (gh[GH_VERSION] != GW_WIRE_VERSION || (type != GW_FT_DATA && type != GW_FT_ACK &&
						 type != GW_FT_HELLO))
		return GW_EWIRE_VERSION;
	*plen_out = plen;
	return 0;
}

/* The header, payload and sender of a frame gw_wire_check passed. */
static void gw_wire_fill(const uint8_t *frame, uint32_t plen, struct gw_hdr *hdr,
			 const uint8_t **payload, struct gw_addr *src)
{
	const uint8_t *ip = frame + GW_ETH_HLEN;
	const uint8_t *udp = ip + GW_IP_HLEN;
	const uint8_t *gh = udp + GW_UDP_HLEN;

	hdr->type = gh[GH_TYPE];
	hdr->src_node = get_le16(gh + GH_SRC_NODE);
	hdr->dst_node = get_le16(gh + GH_DST_NODE);
	hdr->lane = get_le16(gh + GH_LANE);
	hdr->nrec = get_le16(gh + GH_NREC);
	hdr->epoch = get_le32(gh + GH_EPOCH);
	hdr->seq = get_le32(gh + GH_SEQ);
	hdr->base = get_le32(gh + GH_BASE);
	hdr->len = plen;
	*payload = gh + GW_HDR_LEN;
	if (src) {
		memcpy(src->mac, frame + ETH_SRC, sizeof(src->mac));
		src->ip = get_be32(ip + IP_SRC);
		src->port = get_be16(udp + UDP_SPORT);
	}
}

int gw_wire_peek(const uint8_t *frame, size_t len, uint16_t port, struct gw_hdr *hdr)
{
	uint32_t plen;
	const uint8_t *payload;
	int rc = gw_wire_check(frame, len, port, &plen);

	if (rc == 0)
		gw_wire_fill(frame, plen, hdr, &payload, NULL);
	return rc;
}

int gw_wire_parse_authentic(const uint8_t *frame, size_t len, uint16_t port, struct gw_hdr *hdr,
			    const uint8_t **payload, struct gw_addr *src)
{
	uint32_t plen;
	int rc = gw_wire_check(frame, len, port, &plen);

	if (rc == 0)
		gw_wire_fill(frame, plen, hdr, payload, src);
	return rc;
}

int gw_wire_parse(const uint8_t *frame, size_t len, uint16_t port, struct gw_hdr *hdr,
		  const uint8_t **payload, struct gw_addr *src)
{
	const uint8_t *gh = frame + GW_OUTER_HLEN;
	uint32_t plen;
	int rc = gw_wire_check(frame, len, port, &plen);

	if (rc < 0)
		return rc;
	/* The CRC was computed with its own field zeroed. */
	uint8_t h[GW_HDR_LEN];
	memcpy(h, gh, GH_CRC);
	memset(h + GH_CRC, 0, GW_HDR_LEN - GH_CRC);
	uint32_t crc = gw_crc32c(0, h, sizeof(h));
	crc = gw_crc32c(crc, gh + GW_HDR_LEN, plen);
	if (crc != get_le32(gh + GH_CRC))
		return GW_EWIRE_CRC;
	gw_wire_fill(frame, plen, hdr, payload, src);
	return 0;
}

int gw_wire_rec_put(uint8_t *payload, size_t cap, size_t *used, const struct gw_rec *rec)
{
	size_t off = *used;
	size_t need = GW_REC_HLEN + (size_t)rec->len;

	if (off > cap || cap - off < need)
		return -ENOSPC;
	/* The 16-byte header as two words: len, kind, flags 0, dst_ep | src_chan, 0, msg_id. */
	uint8_t *p = payload + off;
	put_le64(p, (uint64_t)rec->len | (uint64_t)rec->kind << 16 | (uint64_t)rec->dst_ep << 32);
	put_le64(p + 8, (uint64_t)rec->src_chan | (uint64_t)rec->msg_id << 32);
	memcpy(p + GW_REC_HLEN, rec->data, rec->len);
	*used = off + need;
	return 0;
}

int gw_wire_rec_next(const uint8_t *payload, size_t len, size_t *off, struct gw_rec *rec)
{
	size_t o = *off;

	if (o >= len)
		return o == len ? 0 : -EBADMSG;
	if (len - o < GW_REC_HLEN)
		return -EBADMSG;
	const uint8_t *p = payload + o;
	uint16_t rlen = get_le16(p);
	uint8_t kind = p[2];
	if (kind < GW_RK_MSG || kind > GW_RK_SUBS || len - o - GW_REC_HLEN < rlen)
		return -EBADMSG;
	/* flags and reserved are ignored: senders write 0, a later version may not. */
	rec->kind = kind;
	rec->len = rlen;
	rec->dst_ep = get_le32(p + 4);
	rec->src_chan = get_le16(p + 8);
	rec->msg_id = get_le32(p + 12);
	rec->data = p + GW_REC_HLEN;
	*off = o + GW_REC_HLEN + rlen;
	return 1;
}

void gw_wire_reject_put(uint8_t *data, const struct gw_reject_body *rj)
{
	put_le32(data, (uint32_t)rj->err);
	put_le32(data + 4, rj->msg_id);
	put_le16(data + 8, rj->node);
	put_le16(data + 10, 0);
}

int gw_wire_reject_get(const uint8_t *data, size_t len, struct gw_reject_body *rj)
{
	if (len < GW_REJECT_LEN)
		return -EBADMSG;
	rj->err = (int32_t)get_le32(data);
	rj->msg_id = get_le32(data + 4);
	rj->node = get_le16(data + 8);
	return 0;
}

size_t gw_wire_subs_put(uint8_t *data, size_t cap, uint32_t version, uint16_t total,
			uint16_t first, const char (*names)[GW_NAME_MAX], const uint32_t *ids,
			uint16_t n)
{
	size_t len = GW_SUBS_HLEN + (size_t)n * GW_SUBS_ENTRY;
	if (len > cap || (uint32_t)first + n > total)
		return 0;
	put_le32(data, version);
	put_le16(data + 4, total);
	put_le16(data + 6, first);
	for (uint16_t i = 0; i < n; i++) {
		uint8_t *e = data + GW_SUBS_HLEN + (size_t)i * GW_SUBS_ENTRY;
		put_le32(e, ids[i]);
		size_t nl = strnlen(names[i], GW_NAME_MAX - 1);
		memcpy(e + 4, names[i], nl);
		memset(e + 4 + nl, 0, GW_NAME_MAX - nl);
	}
	return len;
}

int gw_wire_subs_get(const uint8_t *data, size_t len, struct gw_subs_hdr *h,
		     char (*names)[GW_NAME_MAX], uint32_t *ids, uint16_t max)
{
	if (len < GW_SUBS_HLEN || (len - GW_SUBS_HLEN) % GW_SUBS_ENTRY)
		return -EBADMSG;
	size_t n = (len - GW_SUBS_HLEN) / GW_SUBS_ENTRY;
	uint16_t total = get_le16(data + 4), first = get_le16(data + 6);
	if (n > max || first + n > total)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++) {
		const uint8_t *e = data + GW_SUBS_HLEN + i * GW_SUBS_ENTRY;
		if (!get_le32(e) || !memchr(e + 4, '\0', GW_NAME_MAX))
			return -EBADMSG;
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *e = data + GW_SUBS_HLEN + i * GW_SUBS_ENTRY;
		ids[i] = get_le32(e);
		memcpy(names[i], e + 4, GW_NAME_MAX);
	}
	h->version = get_le32(data);
	h->total = total;
	h->first = first;
	h->n = (uint16_t)n;
	return 0;
}

size_t gw_wire_ack_put(uint8_t *payload, const struct gw_ack *ack)
{
	unsigned nbits = ack->nbits < GW_SACK_BITS ? ack->nbits : GW_SACK_BITS;
	unsigned nbytes = (nbits + 7) / 8;

	put_le32(payload + ACK_EPOCH, ack->acked_epoch);
	put_le32(payload + ACK_CUM, ack->cum);
	put_le16(payload + ACK_NBITS, (uint16_t)(nbytes * 8));
	put_le16(payload + ACK_GRANT, ack->grant);
	memcpy(payload + ACK_SACK, ack->sack, nbytes);
	/* Bits past nbits may be stale in the caller's array: never claim them. */
	if (nbits % 8)
		payload[ACK_SACK + nbytes - 1] &= (uint8_t)((1u << (nbits % 8)) - 1);
	return ACK_SACK + nbytes;
}

int gw_wire_ack_get(const uint8_t *payload, size_t len, struct gw_ack *ack)
{
	if (len < ACK_SACK)
		return -EBADMSG;
	uint16_t nbits = get_le16(payload + ACK_NBITS);
	if (nbits % 8 || nbits > GW_SACK_BITS || len != ACK_SACK + (size_t)nbits / 8)
		return -EBADMSG;
	ack->acked_epoch = get_le32(payload + ACK_EPOCH);
	ack->cum = get_le32(payload + ACK_CUM);
	ack->nbits = nbits;
	ack->grant = get_le16(payload + ACK_GRANT);
	memcpy(ack->sack, payload + ACK_SACK, nbits / 8);
	memset(ack->sack + nbits / 8, 0, sizeof(ack->sack) - nbits / 8);
	return 0;
}

size_t gw_wire_hello_put(uint8_t *payload, const struct gw_hello *h)
{
	size_t n = strnlen(h->name, GW_NAME_MAX - 1);

	if (n == 0)
		return 0;
	put_le32(payload + HELLO_CAPS, h->caps);
	put_le16(payload + HELLO_INTERVAL, h->interval_ms);
	unsigned k = h->nkeys < GW_HELLO_KEYS ? h->nkeys : GW_HELLO_KEYS;
	payload[HELLO_NAME_LEN] = (uint8_t)n;
	payload[HELLO_NKEYS] = (uint8_t)k;
	memcpy(payload + HELLO_NAME, h->name, n);
	for (unsigned i = 0; i < k; i++)
		put_le32(payload + HELLO_NAME + n + 4 * i, h->keys[i]);
	return HELLO_NAME + n + 4 * k;
}

int gw_wire_hello_get(const uint8_t *payload, size_t len, struct gw_hello *h)
{
	if (len < HELLO_NAME)
		return -EBADMSG;
	size_t n = payload[HELLO_NAME_LEN], k = payload[HELLO_NKEYS];
	/* A NUL inside the name would silently shorten it: refuse. */
	if (n == 0 || n > GW_NAME_MAX - 1 || k > GW_HELLO_KEYS || len != HELLO_NAME + n + 4 * k ||
	    memchr(payload + HELLO_NAME, 0, n))
		return -EBADMSG;
	h->nkeys = (uint8_t)k;
	for (size_t i = 0; i < k; i++)
		h->keys[i] = get_le32(payload + HELLO_NAME + n + 4 * i);
	h->caps = get_le32(payload + HELLO_CAPS);
	h->interval_ms = get_le16(payload + HELLO_INTERVAL);
	memcpy(h->name, payload + HELLO_NAME, n);
	memset(h->name + n, 0, sizeof(h->name) - n);
	return 0;
}

const char *gw_wire_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case GW_EWIRE_SHORT:
		return "truncated frame or inconsistent lengths";
	case GW_EWIRE_NOTGW:
		return "not a gridwire frame (not IPv4/UDP to our port, or bad magic)";
	case GW_EWIRE_VERSION:
		return "unknown gridwire version or frame type";
	case GW_EWIRE_CRC: /* == -EBADMSG, also what the payload decoders return */
		return "CRC32C mismatch or malformed payload";
	case -ENOSPC:
		return "record does not fit in the frame";
	default:
		return "unknown wire error";
	}
}
