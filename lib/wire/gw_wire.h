/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gw_wire: the gridwire frame and record codec (pure C, no DPDK).
 *
 * A frame is Ethernet + IPv4 + UDP + a gridwire header + a payload. For a
 * DATA frame the payload is a run of length-prefixed records; for an ACK it
 * is a cumulative ack plus a selective-ack bitmap; for a HELLO it is the
 * sender's name. doc/protocol.md has the byte layout. The gridwire header
 * and records are little-endian; Ethernet/IP/UDP use network order so that
 * standard tools, NIC RSS and bond l34 hashing read them.
 */
#ifndef GW_WIRE_H
#define GW_WIRE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define GW_WIRE_MAGIC 0x5747u /* "GW" little-endian */
#define GW_WIRE_VERSION 1

#define GW_ETH_HLEN 14
#define GW_IP_HLEN 20
#define GW_UDP_HLEN 8
#define GW_OUTER_HLEN (GW_ETH_HLEN + GW_IP_HLEN + GW_UDP_HLEN)
#define GW_HDR_LEN 32
#define GW_REC_HLEN 16
#define GW_FRAME_MIN (GW_OUTER_HLEN + GW_HDR_LEN)
/* Largest frame the codec accepts: a 9000-byte IP MTU plus Ethernet. */
#define GW_FRAME_MAX (9000 + GW_ETH_HLEN)
#define GW_NAME_MAX 32

enum gw_frame_type {
	GW_FT_DATA = 1,
	GW_FT_ACK = 2,
	GW_FT_HELLO = 3,
};

enum gw_rec_kind {
	GW_RK_MSG = 1,    /* a message for endpoint dst_ep */
	GW_RK_REJECT = 2, /* a message of src_chan/msg_id could not be delivered */
	GW_RK_PUB = 3,    /* a message published to topic dst_ep, for its subscribers there */
	GW_RK_SUBS = 4,   /* part of the sender's topic advertisement (gw_wire_subs_get) */
};

/* Addresses of one end of a link: what the outer headers carry. */
struct gw_addr {
	uint8_t mac[6];
	uint32_t ip; /* host order */
	uint16_t port;
};

/*
 * The lane field's top bit: a lane of the urgent class. Each sender has one
 * lane of each class to each peer, with its own sequence and SACK space, so
 * a lost bulk frame never holds up urgent delivery.
 */
#define GW_LANE_URGENT 0x8000u

/* Classes of message: each has its own channel ring, lanes and frames. */
enum gw_class { GW_CLASS_BULK = 0, GW_CLASS_URGENT = 1, GW_CLASSES = 2 };

/* Decoded gridwire header. */
struct gw_hdr {
	uint8_t type;
	uint16_t src_node;
	uint16_t dst_node;
	uint16_t lane;
	uint16_t nrec;
	uint32_t epoch; /* sender instance; a new one means the sender restarted */
	uint32_t seq;   /* DATA: frame sequence number within the lane */
	uint32_t base;  /* DATA: every seq below base is acknowledged (sender's una) */
	uint32_t len;   /* payload bytes after the header */
};

/* One record inside a DATA frame. */
struct gw_rec {
	uint8_t kind;
	uint16_t len;      /* payload bytes */
	uint32_t dst_ep;   /* endpoint id on the destination node */
	uint16_t src_chan; /* sender channel on the source node */
	uint32_t msg_id;   /* sender's message number, echoed in a REJECT */
	const uint8_t *data;
};

/* The data of a REJECT record: which message could not be delivered, why. */
#define GW_REJECT_LEN 12
struct gw_reject_body {
	int32_t err;     /* a negative errno */
	uint32_t msg_id; /* the rejected message's, again */
	uint16_t node;   /* the node it was for (0: the frame's sender) */
};

/*
 * The data of a SUBS record: the topics that have subscribers on the
 * sending node, as of its version. One advertisement may take several
 * records (entries first .. first + n - 1 of total); the receiver
 * replaces what the node said before once it has all of one version.
 * Each entry is a topic id and its name, NUL-padded to GW_NAME_MAX.
 */
#define GW_SUBS_HLEN 8
#define GW_SUBS_ENTRY (4 + GW_NAME_MAX)
#define GW_SUBS_ENTRIES_MAX 28 /* entries in one SUBS record at most: its data fits 1 KB */
struct gw_subs_hdr {
	uint32_t version;
	uint16_t total; /* entries in the whole advertisement */
	uint16_t first; /* index of this record's first entry */
	uint16_t n;     /* entries in this record (from its length) */
};

/*
 * ACK payload: all seq < cum delivered; bit i of sack means cum+1+i is held.
 * Bit i is bit (i % 8), least significant first, of sack[i / 8].
 */
#define GW_SACK_BITS 256
struct gw_ack {
	uint32_t acked_epoch; /* epoch of the DATA sender being acknowledged */
	uint32_t cum;
	uint16_t nbits;
	/* The ACK's reserved field, in acks to a GW_CAP_GRANT peer: the bytes
	 * (in GW_ACK_GRANT_UNIT) this lane may have in flight; 0: no grant. */
	uint16_t grant;
	uint8_t sack[GW_SACK_BITS / 8];
};
#define GW_ACK_GRANT_UNIT 64u

/* HELLO capability bits: how the sender runs, for its peers to show. */
#define GW_CAP_AUTH 1u     /* its frames carry an [auth] tag */
#define GW_CAP_BATCHING 2u /* it packs several messages per frame (batch_max != 1) */
#define GW_CAP_URGENT 4u   /* it takes urgent lanes (GW_LANE_URGENT) */
#define GW_CAP_GRANT 8u    /* it sends within the grants in ACKs, and grants */
#define GW_CAP_TOPICS 16u  /* it takes PUB and SUBS records (topics) */

/* HELLO payload. keys: the [auth] key ids the sender holds, newest first
 * (its peers seal with the newest of them they hold too). */
#define GW_HELLO_KEYS 2
struct gw_hello {
	uint32_t caps;
	uint16_t interval_ms;
	char name[GW_NAME_MAX];
	uint8_t nkeys;
	uint32_t keys[GW_HELLO_KEYS];
};

/* Error codes of gw_wire_parse, all negative errno values. */
#define GW_EWIRE_SHORT (-EMSGSIZE)     /* truncated, oversized or inconsistent lengths */
#define GW_EWIRE_NOTGW (-EPROTONOSUPPORT) /* not IPv4/UDP to our port, a fragment or bad magic */
#define GW_EWIRE_VERSION (-EPROTO)     /* unknown version or frame type */
#define GW_EWIRE_CRC (-EBADMSG)        /* CRC32C mismatch (same value as a malformed payload) */

uint32_t gw_crc32c(uint32_t crc, const void *buf, size_t len);

/*
 * Write the outer headers and the gridwire header in front of a payload
 * already placed at frame + GW_FRAME_MIN, and seal the frame with its CRC.
 * hdr->len is the payload length, at most GW_FRAME_MAX - GW_FRAME_MIN.
 * Returns the total frame length, GW_FRAME_MIN + hdr->len.
 */
size_t gw_wire_seal(uint8_t *frame, const struct gw_addr *src, const struct gw_addr *dst,
		    const struct gw_hdr *hdr);

/*
 * The base field of a sealed frame, and a new one sealed in (CRC again):
 * a frame sent again must carry the sender's current base, or a receiver
 * that restarted meanwhile would wait for frames already released.
 */
uint32_t gw_wire_base(const uint8_t *frame);
/* The record count of a frame that passed gw_wire_parse (or that we sealed). */
uint16_t gw_wire_nrec(const uint8_t *frame);
/* The payload of a frame this node sealed, and its length (no checks: the
 * frame is our own, e.g. one a lane gives up). */
const uint8_t *gw_wire_sealed_payload(const uint8_t *frame, size_t *len);
/* Set the IP total length (and the UDP length and IP checksum that follow
 * from it), for a trailer added or taken off after the payload. */
void gw_wire_set_ip_len(uint8_t *frame, uint16_t ip_len);
/* Set the IP DSCP (0..63) of a sealed frame, for a switch's priority
 * queues; outside what the CRC and an [auth] tag cover, so a network that
 * marks again harms nothing. */
void gw_wire_set_dscp(uint8_t *frame, uint8_t dscp);
void gw_wire_restamp_base(uint8_t *frame, uint32_t base);

/*
 * Check and decode a frame: outer headers, magic, version, lengths and CRC.
 * On success fills *hdr, sets *payload to the payload and returns 0;
 * otherwise returns one of the GW_EWIRE_* codes. port is the UDP
 * destination port gridwire listens on. src (may be NULL) receives the
 * sender's MAC, IP and UDP source port. Bytes after the IP datagram
 * (Ethernet padding) are ignored; the IP header checksum is not checked.
 */
int gw_wire_parse(const uint8_t *frame, size_t len, uint16_t port, struct gw_hdr *hdr,
		  const uint8_t **payload, struct gw_addr *src);
/* gw_wire_parse without the CRC, for a frame whose [auth] tag (gw_auth)
 * has already proved every byte the CRC covers intact: a second pass over
 * the frame for nothing. */
int gw_wire_parse_authentic(const uint8_t *frame, size_t len, uint16_t port, struct gw_hdr *hdr,
			    const uint8_t **payload, struct gw_addr *src);

/*
 * The header of a frame that gw_wire_parse would check all but the CRC of:
 * 0 and *hdr, or one of its codes (never GW_EWIRE_CRC). A hint, not a
 * verified header: for deciding to drop a frame that could only be a copy
 * of one already verified (a parallel port's second copy), never to act
 * on what it says.
 */
int gw_wire_peek(const uint8_t *frame, size_t len, uint16_t port, struct gw_hdr *hdr);

/*
 * Append one record (kind GW_RK_*, data non-NULL) to a payload being built:
 * at payload + *used, advancing *used. -ENOSPC, writing nothing, if the
 * record does not fit in cap.
 */
int gw_wire_rec_put(uint8_t *payload, size_t cap, size_t *used, const struct gw_rec *rec);

/*
 * Iterate records of a checked DATA payload: *off starts at 0. Returns 1 and
 * fills *rec (rec->data points into payload), 0 at the end, or -EBADMSG
 * when a record overruns the payload or has an unknown kind.
 */
int gw_wire_rec_next(const uint8_t *payload, size_t len, size_t *off, struct gw_rec *rec);

/*
 * Encode/decode ACK and HELLO payloads. Encoders return the payload length;
 * decoders return 0 or -EBADMSG and fill their output only on success.
 * gw_wire_ack_put rounds nbits up to a multiple of 8 (sending the added bits
 * clear) and caps it at GW_SACK_BITS; gw_wire_ack_get clears sack past nbits.
 * gw_wire_hello_put sends at most GW_NAME_MAX - 1 name bytes and returns 0,
 * writing nothing, for an empty name (which no peer would accept).
 */
size_t gw_wire_ack_put(uint8_t *payload, const struct gw_ack *ack);
/* A REJECT's data: GW_REJECT_LEN bytes, little-endian like the rest. */
void gw_wire_reject_put(uint8_t *data, const struct gw_reject_body *rj);
int gw_wire_reject_get(const uint8_t *data, size_t len, struct gw_reject_body *rj);
int gw_wire_ack_get(const uint8_t *payload, size_t len, struct gw_ack *ack);
size_t gw_wire_hello_put(uint8_t *payload, const struct gw_hello *h);
int gw_wire_hello_get(const uint8_t *payload, size_t len, struct gw_hello *h);

/*
 * A SUBS record's data: entries first .. first + n - 1 of an advertisement
 * of total at version, into data (cap bytes); returns its length, or 0
 * when it does not fit or first + n > total.
 */
size_t gw_wire_subs_put(uint8_t *data, size_t cap, uint32_t version, uint16_t total,
			uint16_t first, const char (*names)[GW_NAME_MAX], const uint32_t *ids,
			uint16_t n);
/* Decode one: 0 with *h and its entries (at most max: -EBADMSG beyond), or
 * -EBADMSG (lengths, first + n > total, an id of 0 or a name not ended). */
int gw_wire_subs_get(const uint8_t *data, size_t len, struct gw_subs_hdr *h,
		     char (*names)[GW_NAME_MAX], uint32_t *ids, uint16_t max);

/* The error codes above as text, for logs and tools. */
const char *gw_wire_strerror(int err);

#endif
