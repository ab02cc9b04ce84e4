/* SPDX-License-Identifier: MIT */
/*
 * ina wire format v2: the fixed 56-byte header that follows Ethernet/IPv4/UDP,
 * its packet types, the sub-block form of a block's payload, and the one
 * validation function every receiver calls.
 * docs/PROTOCOL.md describes every byte; this header is its C form. Multi-byte
 * fields are in network byte order on the wire; struct ina_hdr is the decoded,
 * host-order view that the pipeline and the host engine work with.
 */
#ifndef INA_WIRE_H
#define INA_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define INA_WIRE_VERSION 2
#define INA_HDR_SIZE 56
#define INA_DEFAULT_UDP_PORT 9150

/* Largest world a job may have: the width of the switch's per-slot bitmap. */
#define INA_MAX_WORLD 64
/* Next pointer meaning "this lane has no further non-zero block". */
#define INA_BLOCK_END 0xffffffffu
/* Block index of the header-only packet that opens a lane in the i32
 * encoding, before any block: it carries only the next pointer and exponent. */
#define INA_BLOCK_OPEN 0xfffffffeu
/* Rank field of packets sent by the switch. */
#define INA_RANK_SWITCH 0xffffu
/* Rank field of a REPL that the replica fans out to every rank of the job. */
#define INA_RANK_ALL 0xfffeu
/* Largest block size B: the low 13 bits of the header's block_size field. */
#define INA_BLOCK_MAX 8191u
/* The largest block an ina-switch serves unless told otherwise: its default
 * slot width (--slot-elems); a planned job that does not set its block size
 * stays within it (docs/PROTOCOL.md 5.1). */
#define INA_SLOT_ELEMS_DEFAULT 2048u
/* A block of B elements is cut into 2^sub_log sub-blocks of b = B / 2^sub_log
 * elements (the high 3 bits of block_size); with sub_log > 0 a payload is a
 * presence mask of the sub-blocks, then only the present ones' values. */
#define INA_SUB_LOG_MAX 7u
#define INA_SUB_MAX (1u << INA_SUB_LOG_MAX) /* sub-blocks a block, at most */
/* Longest message text an ERROR packet carries. */
#define INA_ERROR_MSG_MAX 200
/*
 * The range of the i32 'exp' field (docs/PROTOCOL.md 2.1, 7.1, 5.10): a
 * finite non-zero binary32 block has an exponent in -148..128; a rack adds
 * its ranks' headroom ceil(log2 n) <= 6 going up, and hands a spine's
 * exponent down shifted by ceil(log2 W) - ceil(log2 n), -6..6. Whatever a
 * two-tier job can carry lies in INA_EXP_MIN..INA_EXP_MAX; any other value is
 * refused (bad_exp), never clamped. f32, bf16, and a 'next' of END: 0.
 */
#define INA_EXP_FLOAT_MIN \
	(-148) /* the smallest subnormal's; also what an
					* all-zero block announces */
#define INA_EXP_FLOAT_MAX 128
#define INA_EXP_MIN (INA_EXP_FLOAT_MIN - 6)
#define INA_EXP_MAX (INA_EXP_FLOAT_MAX + 6 + 6)

typedef uint16_t ina_be16;
typedef uint32_t ina_be32;
typedef uint64_t ina_be64;

enum ina_pkt_type {
	INA_T_JOIN = 1,	      /* worker -> switch: admit me to a job */
	INA_T_JOIN_ACK = 2,   /* switch -> worker: admitted, with the epoch */
	INA_T_DATA = 3,	      /* worker -> switch: a block (or an empty ack) */
	INA_T_RESULT = 4,     /* switch -> workers: a sum (or header-only) */
	INA_T_WAIT = 5,	      /* switch -> worker: still waiting on ranks */
	INA_T_FIN = 6,	      /* worker -> switch: my last round is done */
	INA_T_FIN_ACK = 7,    /* switch -> worker */
	INA_T_LEAVE = 8,      /* worker -> switch: abort, free the job */
	INA_T_ERROR = 9,      /* switch -> worker: refused, with a reason */
	INA_T_REPL = 10,      /* primary -> replica: a RESULT to store and
				 * send on, rank = its destination or ALL */
	INA_T_FAILOVER = 11,  /* worker -> replica: the primary is silent;
				 * replica -> workers: taken over, new epoch */
	INA_T_KEEPALIVE = 12, /* worker -> switch: I live (an open context
				 * that sent nothing for its keepalive time);
				 * header only, never answered */
	INA_T_MAX = INA_T_KEEPALIVE,
};

enum ina_encoding {
	INA_ENC_F32 = 1,  /* IEEE-754 binary32, big-endian */
	INA_ENC_I32 = 2,  /* two's complement int32 scaled by 2^s, big-endian */
	INA_ENC_BF16 = 3, /* bfloat16 (top half of a binary32), big-endian;
				 * the switch sums in binary32 and rounds once */
	INA_ENC_MAX = INA_ENC_BF16,
};

/* Header flags. */
#define INA_F_VER 0x01	     /* slot version bit: selects current or shadow */
#define INA_F_RETX 0x02	     /* a retransmission (information only) */
#define INA_F_SATURATED 0x04 /* RESULT: an i32 sum saturated */
#define INA_F_DEFERRED \
	0x08 /* RESULT: header-only, the sum is under the
				 * bound: each worker keeps its own part */
#define INA_F_STANDBY \
	0x10 /* JOIN, JOIN_ACK with a replica switch:
				 * stand by for this job (epoch = the
				 * primary's) */
#define INA_F_PARTIAL \
	0x20 /* RESULT, REPL of an ssp job: the block closed
				 * before every rank contributed; an 8-byte
				 * contributor bitmap follows the payload */
#define INA_F_GRANT \
	0x40 /* JOIN_ACK: the job is admitted with fewer
				 * lanes than it asked: the payload's 'lanes'
				 * is the grant (ina-switch --share fair) */
#define INA_F_RESHAPE \
	0x40 /* RESULT (the same bit as GRANT): the job
				 * runs on fewer lanes from round 'bound' on:
				 * 'status' lanes (--share fair giving slots
				 * back to a job that arrived) */
#define INA_F_REDIRECT \
	0x80		 /* JOIN_ACK: the switch has no slots for the
				 * job: aggregate it at the host aggregator
				 * the payload names (struct ina_wire_redirect
				 * after the JOIN payload); epoch 0 */
#define INA_F_KNOWN 0xff /* every flag v1 defines */

/* ERROR codes (the header's status field). */
enum ina_wire_error {
	INA_WERR_NO_SLOTS = 1,	  /* the slot pool cannot hold the job's lanes */
	INA_WERR_NO_JOBS = 2,	  /* the job table is full */
	INA_WERR_MISMATCH = 3,	  /* JOIN parameters differ from the job's */
	INA_WERR_UNSUPPORTED = 4, /* encoding, block size or world not served */
	INA_WERR_LEFT = 5,	  /* another rank left the job; it is gone */
	INA_WERR_PEER_DEAD = 6,	  /* a rank the job waits on fell silent: the
				 * round is aborted and the job is gone */
	INA_WERR_SHUTDOWN = 7,	  /* the switch is shutting down: no new job, or
				 * the job is aborted */
	INA_WERR_COOKIE = 8,	  /* not a refusal: JOIN again with the cookie
				   * this ERROR carries (ina_wire_cookie()),
				   * proving that the JOIN's source receives */
	INA_WERR_MAX = INA_WERR_COOKIE,
};

/* The header as it lies on the wire. */
struct ina_wire_hdr {
	uint8_t version;     /* INA_WIRE_VERSION */
	uint8_t type;	     /* enum ina_pkt_type */
	uint8_t encoding;    /* enum ina_encoding of the payload */
	uint8_t flags;	     /* INA_F_* */
	ina_be32 job_id;     /* job, chosen by the application */
	ina_be32 epoch;	     /* job epoch; 0 in JOIN */
	ina_be16 rank;	     /* sender rank, INA_RANK_SWITCH from the switch */
	ina_be16 lane;	     /* lane = switch slot within the job */
	ina_be32 tensor_id;  /* application's tensor */
	ina_be32 round;	     /* job-wide allreduce counter */
	ina_be32 tensor_len; /* tensor length, elements */
	ina_be32 block;	     /* block index, INA_BLOCK_OPEN for a lane opener */
	ina_be32 next;	     /* sender's next non-zero block in this lane or END */
	ina_be16 block_size; /* low 13 bits: B, elements per block this
				 * round; high 3 bits: sub_log */
	ina_be16 n_elems;    /* elements in the payload: 0 or min(B, rest) */
	ina_be16 exp;	     /* int16: i32 exponent of the block 'next' names */
	ina_be16 status;     /* ERROR: enum ina_wire_error; else 0 */
	ina_be32 bound;	     /* DATA: the result filter's bound in the
				 * block's units (f32 bits, or i32 scaled like
				 * the block), 0 for none; else 0 */
	ina_be64 token;	     /* job token (64-bit hash of the job secret) */
} __attribute__((packed));

_Static_assert(sizeof(struct ina_wire_hdr) == INA_HDR_SIZE, "wire size");

/*
 * Where a packet's tenant lies on the wire: the first (top) byte of the
 * big-endian job id, the tenant's index in tenant mode (auth.h,
 * INA_TENANT_SHIFT), 0 in token mode. A udp port with tenant_queues=N steers
 * datagrams to its receive queues by it (udp_steer.c).
 */
#define INA_WIRE_TENANT_OFFSET 4
_Static_assert(offsetof(struct ina_wire_hdr, job_id) == INA_WIRE_TENANT_OFFSET, "tenant byte");

/* Decoded header, host byte order. */
struct ina_hdr {
	uint8_t version;
	uint8_t type;
	uint8_t encoding;
	uint8_t flags;
	uint32_t job_id;
	uint32_t epoch;
	uint16_t rank;
	uint16_t lane;
	uint32_t tensor_id;
	uint32_t round;
	uint32_t tensor_len;
	uint32_t block;
	uint32_t next;
	/* The wire's block_size field: the same 16 bits, read as a number. */
	uint16_t block_size : 13; /* B, 1..INA_BLOCK_MAX */
	uint16_t sub_log : 3;	  /* log2 of the sub-blocks a block: 0, a
				   * payload is the block's values */
	uint16_t n_elems;
	int16_t exp;
	uint16_t status;
	uint32_t bound; /* raw: binary32 bits (f32, bf16) or int32 (i32) */
	uint64_t token;
};

/* JOIN and JOIN_ACK payload (8 bytes, big-endian). */
struct ina_wire_join {
	ina_be16 world;	    /* workers in the job, 1..INA_MAX_WORLD */
	ina_be16 lanes;	    /* lanes = slots the job needs */
	ina_be16 max_block; /* largest B the job will use */
	ina_be16 reserved;  /* high byte: ssp bound S (0 = bsp); low byte:
				 * the job's weight in the switch's fair
				 * share, 1..255 (0 = 1) */
} __attribute__((packed));
_Static_assert(sizeof(struct ina_wire_join) == 8, "join size");

/* A REDIRECT JOIN_ACK's payload: the JOIN payload (8 bytes), then where the
 * job goes instead (8 bytes, big-endian). */
struct ina_wire_redirect {
	ina_be32 ipv4;	   /* the host aggregator's IPv4 address */
	ina_be16 port;	   /* its UDP port */
	ina_be16 reserved; /* 0 */
} __attribute__((packed));
_Static_assert(sizeof(struct ina_wire_redirect) == 8, "redirect size");
/*
 * A JOIN cookie (docs/PROTOCOL.md 3.1, 3.7, 5.1): a switch that wants the
 * JOIN's source to prove it receives answers an unproven JOIN with a
 * header-only ERROR INA_WERR_COOKIE; the worker echoes its 64-bit cookie in
 * every further JOIN. It rides in 'tensor_id' (high half) and 'round' (low
 * half), fields a JOIN and an ERROR leave 0 otherwise; 0 is no cookie.
 */
static inline uint64_t
ina_wire_cookie(const struct ina_hdr *h)
{
	return (uint64_t)h->tensor_id << 32 | h->round;
}

static inline void
ina_wire_set_cookie(struct ina_hdr *h, uint64_t cookie)
{
	h->tensor_id = (uint32_t)(cookie >> 32);
	h->round = (uint32_t)cookie;
}

void ina_wire_encode_redirect(uint32_t ipv4, uint16_t port, void *buf);
void ina_wire_decode_redirect(const void *buf, uint32_t *ipv4, uint16_t *port);

/* WAIT payload: bitmap of the ranks the slot still waits on, rank r is bit r. */
#define INA_WAIT_PAYLOAD 8
/* A WAIT's status: INA_WAIT_LIVE when the switch vouches that the ranks it
 * names are alive: it enforces its peer timeout on them (it would have
 * aborted the job instead of answering), so the worker may wait on; 0 when
 * it does not (peer timeout off, or a lane partition other than 0). */
#define INA_WAIT_LIVE 1

/* The trailer of a PARTIAL result: a u64 big-endian bitmap of the ranks whose
 * contribution the sum holds (rank r is bit r), after the payload. */
#define INA_PARTIAL_TRAILER 8

/* The consistency mode of a job rides in the high byte of the JOIN payload's
 * 'reserved' field: 0 is bsp, S (1..INA_SSP_MAX) is ssp:S. */
#define INA_SSP_MAX 8
/* Slot sets per lane of an ssp:S job: round r of lane l uses set
 * r mod INA_SSP_SETS(S), whose version bit both ends keep per lane and set.
 * S + 1 sets hold the rounds in flight; one more keeps a result closed early
 * until the ranks it lacks have read it (docs/PROTOCOL.md 6.7). */
#define INA_SSP_SETS(s) ((uint32_t)(s) + 2u)
void ina_wire_join_set_ssp(void *join_payload, uint8_t s);
uint8_t ina_wire_join_ssp(const void *join_payload);
/* The job's weight in the switch's fair share of its slots (ina-switch
 * --share fair) rides in the low byte of 'reserved': 0 (an older worker)
 * counts as 1. */
void ina_wire_join_set_weight(void *join_payload, uint8_t w);
uint8_t ina_wire_join_weight(const void *join_payload);

/* What a receiver knows of the job a packet claims to belong to. */
struct ina_job_params {
	uint32_t job_id;
	uint32_t epoch;
	uint64_t token;
	uint16_t world;
	uint16_t lanes;
	uint16_t max_block;
	uint8_t encoding;
};

/* Every reason a packet is rejected. Keep ina_wire_reason_name() in step. */
enum ina_wire_reason {
	INA_WIRE_OK = 0,
	INA_WIRE_TRUNCATED, /* shorter than the header */
	INA_WIRE_BAD_VERSION,
	INA_WIRE_BAD_TYPE,
	INA_WIRE_BAD_FLAGS,	 /* unknown flag bits */
	INA_WIRE_BAD_BOUND,	 /* bound negative or NaN, or on a
					 * packet other than DATA */
	INA_WIRE_BAD_ENCODING,	 /* not an encoding v1 knows */
	INA_WIRE_BAD_LENGTH,	 /* payload size disagrees with the header */
	INA_WIRE_BAD_BLOCK_SIZE, /* B is 0 or elements disagree with B */
	INA_WIRE_BLOCK_PAST_TENSOR,
	INA_WIRE_NEXT_NOT_PAST_BLOCK,
	INA_WIRE_NEXT_PAST_TENSOR,
	INA_WIRE_BAD_JOIN,  /* JOIN payload out of range */
	INA_WIRE_WRONG_JOB, /* job id is not the receiver's */
	INA_WIRE_WRONG_TOKEN,
	INA_WIRE_WRONG_EPOCH,
	INA_WIRE_RANK_PAST_WORLD,
	INA_WIRE_LANE_PAST_LANES,
	INA_WIRE_BLOCK_NOT_IN_LANE,
	INA_WIRE_NEXT_NOT_IN_LANE,
	INA_WIRE_WRONG_ENCODING, /* not the job's encoding */
	INA_WIRE_BLOCK_TOO_BIG,	 /* B above the job's max block */
	INA_WIRE_BAD_MASK,	 /* sub-blocks: B not a multiple of their
				  * count, an empty mask, or a bit past the
				  * block's last sub-block */
	INA_WIRE_BAD_EXP,	 /* i32 exp outside INA_EXP_MIN..MAX, or
				  * not 0 where it means nothing */
	INA_WIRE_REASON_MAX,
};

/* Element size of an encoding, 0 if unknown. */
size_t ina_wire_elem_size(uint8_t encoding);

/* Number of blocks of 'block_size' elements in a tensor of 'tensor_len'. */
static inline uint32_t
ina_wire_nb_blocks(uint32_t tensor_len, uint16_t block_size)
{
	return block_size ? (uint32_t)(((uint64_t)tensor_len + block_size - 1) / block_size) : 0;
}

/* Elements block 'block' holds: B, or the tail of the tensor. */
static inline uint16_t
ina_wire_block_elems(uint32_t tensor_len, uint16_t block_size, uint32_t block)
{
	uint64_t start = (uint64_t)block * block_size;
	if (start >= tensor_len)
		return 0;
	return (uint16_t)(tensor_len - start < block_size ? tensor_len - start : block_size);
}

/*
 * Sub-blocks (sub_log > 0): block 'block' of n_elems elements is cut into
 * sub-blocks of b = B >> sub_log elements, sub-block i holding elements
 * [i*b, min((i+1)*b, n_elems)). The payload is the presence mask, bit i of
 * byte i/8 (least significant first) for sub-block i, padded with zero bytes
 * to ina_wire_mask_bytes(); then the present sub-blocks' values, in order.
 */
/* Bytes of the presence mask: 0 without sub-blocks, else 2^sub_log bits
 * rounded up to 4 bytes. */
static inline uint32_t
ina_wire_mask_bytes(uint8_t sub_log)
{
	return sub_log == 0 ? 0 : sub_log <= 5 ? 4 : (1u << sub_log) / 8;
}

/* Elements per sub-block: b = B >> sub_log. */
static inline uint32_t
ina_wire_sub_elems(uint16_t block_size, uint8_t sub_log)
{
	return (uint32_t)block_size >> sub_log;
}

/*
 * Checks the presence mask 'mask' of a block of 'n_elems' elements (> 0) in
 * sub-blocks of 'b' and counts the elements it names: INA_WIRE_OK and
 * '*present' set, or INA_WIRE_BAD_MASK (empty, or a bit past the block's
 * last sub-block, ceil(n_elems / b)).
 */
enum ina_wire_reason ina_wire_mask_check(const uint8_t *mask, uint8_t sub_log, uint32_t b,
					 uint32_t n_elems, uint32_t *present);

/* Writes 'h' to 'buf' (at least INA_HDR_SIZE bytes) in wire order. */
void ina_wire_encode_hdr(const struct ina_hdr *h, void *buf);
/* Reads the header at 'buf' (at least INA_HDR_SIZE bytes) into 'h'. */
void ina_wire_decode_hdr(const void *buf, struct ina_hdr *h);

/*
 * Decodes and validates the packet 'buf' of 'size' bytes into 'h'. Checks
 * everything the packet alone says (version, type, flags, lengths against
 * 'size', block and next pointer against the tensor), then, when 'job' is not
 * NULL, everything that depends on the job (job id, token, epoch unless the
 * packet is a JOIN or a replica's FAILOVER announcement, which carries the
 * new epoch; rank, lane, lane membership of block and next, encoding, block
 * size). A REPL is checked as the RESULT it carries, with a rank below the
 * world or INA_RANK_ALL. Returns INA_WIRE_OK or the first reason for rejection; 'h' is
 * filled whenever the header itself could be read.
 */
enum ina_wire_reason ina_wire_validate(const void *buf, size_t size,
				       const struct ina_job_params *job, struct ina_hdr *h);

/* Short lower-case name of a reason ("bad_version"), for counters and logs. */
const char *ina_wire_reason_name(enum ina_wire_reason r);
/* Name of a packet type ("data"), "unknown" if not one. */
const char *ina_wire_type_name(uint8_t type);
/* Name of an encoding ("f32"), NULL if not one; and the reverse, 0 if unknown. */
const char *ina_wire_encoding_name(uint8_t encoding);
uint8_t ina_wire_encoding_parse(const char *name);

/* JOIN payload codec. */
void ina_wire_encode_join(uint16_t world, uint16_t lanes, uint16_t max_block, void *buf);
void ina_wire_decode_join(const void *buf, uint16_t *world, uint16_t *lanes, uint16_t *max_block);

#endif
