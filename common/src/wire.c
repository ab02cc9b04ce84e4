/* SPDX-License-Identifier: MIT */
/*
 * ina wire format v2 (wire.h): header and JOIN payload codecs, and the one
 * validation function that every receiver (switch pipeline, host engine)
 * runs before it trusts a byte. Everything goes through memcpy into the
 * packed wire structs, so any buffer alignment is fine.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <stddef.h>
#include <string.h>

#include "ina/encoding.h"
#include "ina/wire.h"

size_t
ina_wire_elem_size(uint8_t encoding)
{
	const struct ina_encoding_ops *enc = ina_encoding(encoding);

	return enc ? enc->elem_size : 0;
}

/*
 * struct ina_hdr keeps the wire header's layout, field for field, so that
 * with SSSE3 decoding and encoding are one byte shuffle per 16 bytes
 * (reversing each field's bytes; the same shuffle both ways) and a byte
 * swap of the token; without it, field by field. The block_size field's
 * 16 bits are two bit-fields of struct ina_hdr (B below, sub_log above),
 * which the byte swap leaves where the wire has them.
 */
#define SAME_OFFSET(f) (offsetof(struct ina_hdr, f) == offsetof(struct ina_wire_hdr, f))
_Static_assert(sizeof(struct ina_hdr) == INA_HDR_SIZE && SAME_OFFSET(version) &&
		       SAME_OFFSET(type) && SAME_OFFSET(encoding) && SAME_OFFSET(flags) &&
		       SAME_OFFSET(job_id) && SAME_OFFSET(epoch) && SAME_OFFSET(rank) &&
		       SAME_OFFSET(lane) && SAME_OFFSET(tensor_id) && SAME_OFFSET(round) &&
		       SAME_OFFSET(tensor_len) && SAME_OFFSET(block) && SAME_OFFSET(next) &&
		       SAME_OFFSET(n_elems) && SAME_OFFSET(exp) && SAME_OFFSET(status) &&
		       SAME_OFFSET(bound) && SAME_OFFSET(token),
	       "struct ina_hdr must keep the layout of struct ina_wire_hdr");

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define WIRE_SSSE3 1

/* 'dst' = the 56 header bytes at 'src' with every field's bytes reversed. */
__attribute__((target("ssse3"))) static void
swap_hdr_ssse3(void *dst, const void *src)
{
	/* bytes 0-15: version, type, encoding, flags, job_id, epoch, rank, lane */
	const __m128i m0 = _mm_setr_epi8(0, 1, 2, 3, 7, 6, 5, 4, 11, 10, 9, 8, 13, 12, 15, 14);
	/* 16-31: tensor_id, round, tensor_len, block */
	const __m128i m1 = _mm_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
	/* 32-47: next, block_size, n_elems, exp, status, bound */
	const __m128i m2 = _mm_setr_epi8(3, 2, 1, 0, 5, 4, 7, 6, 9, 8, 11, 10, 15, 14, 13, 12);
	const uint8_t *s = src;
	uint8_t *d = dst;
	__m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)s);
	__m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
	__m128i v2 = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
	uint64_t token;

	memcpy(&token, s + 48, sizeof(token));
	token = __builtin_bswap64(token);
	_mm_storeu_si128((__m128i *)(void *)d, _mm_shuffle_epi8(v0, m0));
	_mm_storeu_si128((__m128i *)(void *)(d + 16), _mm_shuffle_epi8(v1, m1));
	_mm_storeu_si128((__m128i *)(void *)(d + 32), _mm_shuffle_epi8(v2, m2));
	memcpy(d + 48, &token, sizeof(token));
}
#endif

void
ina_wire_encode_hdr(const struct ina_hdr *h, void *buf)
{
	struct ina_wire_hdr w;

#ifdef WIRE_SSSE3
	if (__builtin_cpu_supports("ssse3")) {
		swap_hdr_ssse3(buf, h);
		return;
	}
#endif

	w.version = h->version;
	w.type = h->type;
	w.encoding = h->encoding;
	w.flags = h->flags;
	w.job_id = htonl(h->job_id);
	w.epoch = htonl(h->epoch);
	w.rank = htons(h->rank);
	w.lane = htons(h->lane);
	w.tensor_id = htonl(h->tensor_id);
	w.round = htonl(h->round);
	w.tensor_len = htonl(h->tensor_len);
	w.block = htonl(h->block);
	w.next = htonl(h->next);
	w.block_size = htons((uint16_t)(h->block_size | (unsigned)h->sub_log << 13));
	w.n_elems = htons(h->n_elems);
	w.exp = htons((uint16_t)h->exp);
	w.status = htons(h->status);
	w.bound = htonl(h->bound);
	w.token = htobe64(h->token);
	memcpy(buf, &w, sizeof(w));
}

void
ina_wire_decode_hdr(const void *buf, struct ina_hdr *h)
{
	struct ina_wire_hdr w;

#ifdef WIRE_SSSE3
	if (__builtin_cpu_supports("ssse3")) {
		swap_hdr_ssse3(h, buf);
		return;
	}
#endif

	memcpy(&w, buf, sizeof(w));
	h->version = w.version;
	h->type = w.type;
	h->encoding = w.encoding;
	h->flags = w.flags;
	h->job_id = ntohl(w.job_id);
	h->epoch = ntohl(w.epoch);
	h->rank = ntohs(w.rank);
	h->lane = ntohs(w.lane);
	h->tensor_id = ntohl(w.tensor_id);
	h->round = ntohl(w.round);
	h->tensor_len = ntohl(w.tensor_len);
	h->block = ntohl(w.block);
	h->next = ntohl(w.next);
	h->block_size = ntohs(w.block_size) & INA_BLOCK_MAX;
	h->sub_log = ntohs(w.block_size) >> 13;
	h->n_elems = ntohs(w.n_elems);
	h->exp = (int16_t)ntohs(w.exp);
	h->status = ntohs(w.status);
	h->bound = ntohl(w.bound);
	h->token = be64toh(w.token);
}

void
ina_wire_encode_join(uint16_t world, uint16_t lanes, uint16_t max_block, void *buf)
{
	struct ina_wire_join j;

	j.world = htons(world);
	j.lanes = htons(lanes);
	j.max_block = htons(max_block);
	j.reserved = 0;
	memcpy(buf, &j, sizeof(j));
}

void
ina_wire_decode_join(const void *buf, uint16_t *world, uint16_t *lanes, uint16_t *max_block)
{
	struct ina_wire_join j;

	memcpy(&j, buf, sizeof(j));
	*world = ntohs(j.world);
	*lanes = ntohs(j.lanes);
	*max_block = ntohs(j.max_block);
}

void
ina_wire_join_set_ssp(void *join_payload, uint8_t s)
{
	/* The high byte of 'reserved' (offset 6, big-endian). */
	((uint8_t *)join_payload)[offsetof(struct ina_wire_join, reserved)] = s;
}

uint8_t
ina_wire_join_ssp(const void *join_payload)
{
	return ((const uint8_t *)join_payload)[offsetof(struct ina_wire_join, reserved)];
}

void
ina_wire_join_set_weight(void *join_payload, uint8_t w)
{
	/* The low byte of 'reserved' (offset 7). */
	((uint8_t *)join_payload)[offsetof(struct ina_wire_join, reserved) + 1] = w;
}

uint8_t
ina_wire_join_weight(const void *join_payload)
{
	return ((const uint8_t *)join_payload)[offsetof(struct ina_wire_join, reserved) + 1];
}

void
ina_wire_encode_redirect(uint32_t ipv4, uint16_t port, void *buf)
{
	struct ina_wire_redirect r;

	r.ipv4 = htonl(ipv4);
	r.port = htons(port);
	r.reserved = 0;
	memcpy(buf, &r, sizeof(r));
}

void
ina_wire_decode_redirect(const void *buf, uint32_t *ipv4, uint16_t *port)
{
	struct ina_wire_redirect r;

	memcpy(&r, buf, sizeof(r));
	*ipv4 = ntohl(r.ipv4);
	*port = ntohs(r.port);
}

/* JOIN and JOIN_ACK: the encoding, the size and the payload's ranges. */
static enum ina_wire_reason
validate_join(const uint8_t *buf, size_t size, const struct ina_hdr *h)
{
	struct ina_wire_join j;
	uint16_t world, lanes, max_block;

	int redirect = (h->flags & INA_F_REDIRECT) != 0;

	if (!ina_wire_elem_size(h->encoding))
		return INA_WIRE_BAD_ENCODING;
	if (size != INA_HDR_SIZE + sizeof(j) + (redirect ? sizeof(struct ina_wire_redirect) : 0))
		return INA_WIRE_BAD_LENGTH;
	if (redirect) {
		struct ina_wire_redirect rd;

		/* Somewhere to go: an address, a port, reserved 0. */
		memcpy(&rd, buf + INA_HDR_SIZE + sizeof(j), sizeof(rd));
		if (rd.ipv4 == 0 || rd.port == 0 || rd.reserved != 0)
			return INA_WIRE_BAD_JOIN;
	}
	memcpy(&j, buf + INA_HDR_SIZE, sizeof(j));
	ina_wire_decode_join(&j, &world, &lanes, &max_block);
	/* 'reserved': the high byte is the ssp bound (0 = bsp), the low byte
	 * the weight (any value). */
	if (world < 1 || world > INA_MAX_WORLD || lanes < 1 || max_block < 1 ||
	    max_block > INA_BLOCK_MAX || (ntohs(j.reserved) >> 8) > INA_SSP_MAX)
		return INA_WIRE_BAD_JOIN;
	if (h->type == INA_T_JOIN && h->rank >= world)
		return INA_WIRE_RANK_PAST_WORLD;
	return INA_WIRE_OK;
}

/* 1 when block 'b' is one of the tensor's: b < ceil(tensor_len / B), that
 * is b * B < tensor_len, without a division (every packet asks). */
static inline int
block_in_tensor(const struct ina_hdr *h, uint32_t b)
{
	return (uint64_t)b * h->block_size < h->tensor_len;
}

/* x % lanes: a mask for a power of two (the usual lane counts), without
 * the division every packet would otherwise pay for. */
static inline uint32_t
mod_lanes(uint32_t x, uint16_t lanes)
{
	return (lanes & (lanes - 1)) == 0 ? x & (uint32_t)(lanes - 1) : x % lanes;
}

enum ina_wire_reason
ina_wire_mask_check(const uint8_t *mask, uint8_t sub_log, uint32_t b, uint32_t n_elems,
		    uint32_t *present)
{
	uint32_t count = (n_elems + b - 1) / b; /* the block's sub-blocks */
	uint32_t nbytes = ina_wire_mask_bytes(sub_log);
	uint32_t bits = 0;

	for (uint32_t i = 0; i < nbytes; i++) {
		uint32_t first = 8 * i;
		unsigned valid = first >= count	      ? 0u
				 : count - first >= 8 ? 0xffu
						      : (1u << (count - first)) - 1u;

		if (mask[i] & ~valid)
			return INA_WIRE_BAD_MASK;
		bits += (uint32_t)__builtin_popcount(mask[i]);
	}
	if (bits == 0)
		return INA_WIRE_BAD_MASK;
	*present = bits * b;
	if (mask[(count - 1) / 8] >> ((count - 1) % 8) & 1)
		*present -= count * b - n_elems; /* the short last sub-block */
	return INA_WIRE_OK;
}

/*
 * The payload of a block's packet: 'size' must be the header, the values
 * (with sub-blocks: the mask and the present sub-blocks' values) and
 * 'trailer' bytes. INA_WIRE_OK, INA_WIRE_BAD_MASK or INA_WIRE_BAD_LENGTH.
 */
static inline enum ina_wire_reason
payload_check(const uint8_t *buf, size_t size, const struct ina_hdr *h, size_t elem_size,
	      uint32_t trailer)
{
	uint64_t want = (uint64_t)INA_HDR_SIZE + trailer;
	uint32_t present = h->n_elems;

	if (h->sub_log && h->n_elems) {
		uint32_t mask_bytes = ina_wire_mask_bytes(h->sub_log);
		enum ina_wire_reason r;

		if (size < (uint64_t)INA_HDR_SIZE + mask_bytes)
			return INA_WIRE_BAD_LENGTH;
		r = ina_wire_mask_check(buf + INA_HDR_SIZE, h->sub_log,
					ina_wire_sub_elems(h->block_size, h->sub_log), h->n_elems,
					&present);
		if (r != INA_WIRE_OK)
			return r;
		want += mask_bytes;
	}
	return (uint64_t)size == want + (uint64_t)present * elem_size ? INA_WIRE_OK
								      : INA_WIRE_BAD_LENGTH;
}

/* B cut into 2^sub_log sub-blocks of equal size. */
static inline int
sub_ok(const struct ina_hdr *h)
{
	return (h->block_size & ((1u << h->sub_log) - 1)) == 0;
}

/* The exponent: i32 with a next block, within INA_EXP_MIN..INA_EXP_MAX;
 * otherwise it means nothing and must be 0. */
static inline int
exp_ok(const struct ina_hdr *h)
{
	if (h->encoding == INA_ENC_I32 && h->next != INA_BLOCK_END)
		return h->exp >= INA_EXP_MIN && h->exp <= INA_EXP_MAX;
	return h->exp == 0;
}

/* DATA and RESULT: block size, block and next pointer against the tensor. */
static enum ina_wire_reason
validate_block(const uint8_t *buf, size_t size, const struct ina_hdr *h)
{
	size_t elem_size = ina_wire_elem_size(h->encoding);
	enum ina_wire_reason r;

	if (!elem_size)
		return INA_WIRE_BAD_ENCODING;
	if (h->block_size < 1)
		return INA_WIRE_BAD_BLOCK_SIZE;
	if (!sub_ok(h))
		return INA_WIRE_BAD_MASK;
	if (h->block == INA_BLOCK_OPEN) {
		if (h->n_elems != 0)
			return INA_WIRE_BAD_BLOCK_SIZE;
		if (size != INA_HDR_SIZE)
			return INA_WIRE_BAD_LENGTH;
		if (h->next != INA_BLOCK_END && !block_in_tensor(h, h->next))
			return INA_WIRE_NEXT_PAST_TENSOR;
		return exp_ok(h) ? INA_WIRE_OK : INA_WIRE_BAD_EXP;
	}
	if (!block_in_tensor(h, h->block))
		return INA_WIRE_BLOCK_PAST_TENSOR;
	if (h->n_elems != 0 &&
	    h->n_elems != ina_wire_block_elems(h->tensor_len, h->block_size, h->block))
		return INA_WIRE_BAD_BLOCK_SIZE;
	r = payload_check(buf, size, h, elem_size,
			  (h->flags & INA_F_PARTIAL) ? INA_PARTIAL_TRAILER : 0);
	if (r != INA_WIRE_OK)
		return r;
	if (h->next != INA_BLOCK_END) {
		if (h->next <= h->block)
			return INA_WIRE_NEXT_NOT_PAST_BLOCK;
		if (!block_in_tensor(h, h->next))
			return INA_WIRE_NEXT_PAST_TENSOR;
	}
	return exp_ok(h) ? INA_WIRE_OK : INA_WIRE_BAD_EXP;
}

/* A DATA packet's bound: an i32 bound is a non-negative int32; any other is
 * a finite, non-negative binary32. */
static int
bound_valid(const struct ina_hdr *h)
{
	if (h->encoding == INA_ENC_I32)
		return h->bound <= INT32_MAX;
	return (h->bound & 0x80000000u) == 0 && (h->bound & 0x7f800000u) != 0x7f800000u;
}

/* Everything the packet alone says; 'h' is already decoded. */
static enum ina_wire_reason
validate_stateless(const uint8_t *buf, size_t size, const struct ina_hdr *h)
{
	if (h->version != INA_WIRE_VERSION)
		return INA_WIRE_BAD_VERSION;
	if (h->type < 1 || h->type > INA_T_MAX)
		return INA_WIRE_BAD_TYPE;
	if (h->flags & ~INA_F_KNOWN)
		return INA_WIRE_BAD_FLAGS;
	/* A DEFERRED result is header-only by definition. */
	if ((h->flags & INA_F_DEFERRED) &&
	    ((h->type != INA_T_RESULT && h->type != INA_T_REPL) || h->n_elems != 0))
		return INA_WIRE_BAD_FLAGS;
	/* PARTIAL belongs to a result of a lane's block (never the i32 OPEN). */
	if ((h->flags & INA_F_PARTIAL) &&
	    ((h->type != INA_T_RESULT && h->type != INA_T_REPL) || h->block == INA_BLOCK_OPEN))
		return INA_WIRE_BAD_FLAGS;
	/* STANDBY belongs to a JOIN and its JOIN_ACK. */
	if ((h->flags & INA_F_STANDBY) && h->type != INA_T_JOIN && h->type != INA_T_JOIN_ACK)
		return INA_WIRE_BAD_FLAGS;
	/* GRANT and REDIRECT belong to a JOIN_ACK, and not together; the
	 * GRANT bit on a RESULT is RESHAPE: 'status' lanes (>= 1) from round
	 * 'bound' on. */
	if ((h->flags & INA_F_REDIRECT) &&
	    (h->type != INA_T_JOIN_ACK || (h->flags & (INA_F_GRANT | INA_F_STANDBY))))
		return INA_WIRE_BAD_FLAGS;
	if (h->type == INA_T_RESULT && (h->flags & INA_F_RESHAPE)) {
		if (h->status == 0)
			return INA_WIRE_BAD_FLAGS;
	} else if ((h->flags & INA_F_GRANT) && h->type != INA_T_JOIN_ACK) {
		return INA_WIRE_BAD_FLAGS;
	}
	/* A KEEPALIVE is the bare header: no flag. */
	if (h->type == INA_T_KEEPALIVE && h->flags)
		return INA_WIRE_BAD_FLAGS;
	if (h->bound != 0 && (h->type != INA_T_DATA || !bound_valid(h)) &&
	    !(h->type == INA_T_RESULT && (h->flags & INA_F_RESHAPE)))
		return INA_WIRE_BAD_BOUND;

	switch (h->type) {
	case INA_T_JOIN:
	case INA_T_JOIN_ACK:
		return validate_join(buf, size, h);
	case INA_T_DATA:
	case INA_T_RESULT:
	case INA_T_REPL:
		return validate_block(buf, size, h);
	case INA_T_WAIT:
		if (size != INA_HDR_SIZE + INA_WAIT_PAYLOAD)
			return INA_WIRE_BAD_LENGTH;
		return INA_WIRE_OK;
	case INA_T_FIN:
	case INA_T_FIN_ACK:
	case INA_T_LEAVE:
	case INA_T_FAILOVER:
	case INA_T_KEEPALIVE:
		if (size != INA_HDR_SIZE)
			return INA_WIRE_BAD_LENGTH;
		return INA_WIRE_OK;
	case INA_T_ERROR:
	default:
		if (size > INA_HDR_SIZE + INA_ERROR_MSG_MAX)
			return INA_WIRE_BAD_LENGTH;
		return INA_WIRE_OK;
	}
}

/* Everything that depends on the job the packet claims to belong to. */
static enum ina_wire_reason
validate_job(const struct ina_hdr *h, const struct ina_job_params *job)
{
	if (h->job_id != job->job_id)
		return INA_WIRE_WRONG_JOB;
	if (h->token != job->token)
		return INA_WIRE_WRONG_TOKEN;
	/* A replica's FAILOVER announces a new epoch: the receiver adopts it. */
	if (h->type != INA_T_JOIN && h->epoch != job->epoch &&
	    !(h->type == INA_T_FAILOVER && h->rank == INA_RANK_SWITCH))
		return INA_WIRE_WRONG_EPOCH;

	switch (h->type) {
	case INA_T_JOIN:
	case INA_T_DATA:
	case INA_T_FIN:
	case INA_T_LEAVE:
	case INA_T_KEEPALIVE:
		if (h->rank >= job->world)
			return INA_WIRE_RANK_PAST_WORLD;
		break;
	case INA_T_REPL:
		if (h->rank >= job->world && h->rank != INA_RANK_ALL)
			return INA_WIRE_RANK_PAST_WORLD;
		break;
	case INA_T_FAILOVER:
		if (h->rank >= job->world && h->rank != INA_RANK_SWITCH)
			return INA_WIRE_RANK_PAST_WORLD;
		break;
	default:
		if (h->rank != INA_RANK_SWITCH)
			return INA_WIRE_RANK_PAST_WORLD;
		break;
	}

	if (h->type != INA_T_DATA && h->type != INA_T_RESULT && h->type != INA_T_REPL &&
	    h->type != INA_T_WAIT)
		return INA_WIRE_OK;
	if (h->lane >= job->lanes)
		return INA_WIRE_LANE_PAST_LANES;
	if (h->block != INA_BLOCK_OPEN && mod_lanes(h->block, job->lanes) != h->lane)
		return INA_WIRE_BLOCK_NOT_IN_LANE;
	/* A WAIT names a lane and its open block; it carries no next pointer. */
	if (h->type == INA_T_WAIT)
		return INA_WIRE_OK;
	if (h->next != INA_BLOCK_END && mod_lanes(h->next, job->lanes) != h->lane)
		return INA_WIRE_NEXT_NOT_IN_LANE;
	if (h->encoding != job->encoding)
		return INA_WIRE_WRONG_ENCODING;
	/* RESHAPE gives lanes back: fewer than the job has. */
	if (h->type == INA_T_RESULT && (h->flags & INA_F_RESHAPE) && h->status >= job->lanes)
		return INA_WIRE_LANE_PAST_LANES;
	if (h->block_size > job->max_block)
		return INA_WIRE_BLOCK_TOO_BIG;
	return INA_WIRE_OK;
}

/* Flags a DATA packet may carry: the others belong to other types. */
#define DATA_FLAGS (INA_F_VER | INA_F_RETX | INA_F_SATURATED)

/*
 * The common case in one expression: 1 when a DATA packet of 'job' passes
 * every check of validate_stateless() and validate_job(), so that the
 * answer is INA_WIRE_OK; 0 when any fails, and the checks one by one then
 * name the first that does. The same conditions, only fused: every DATA
 * packet comes here.
 */
static inline int
data_ok(const uint8_t *buf, size_t size, const struct ina_hdr *h, const struct ina_job_params *job)
{
	size_t elem_size = ina_wire_elem_size(h->encoding);
	int in_job = h->version == INA_WIRE_VERSION && !(h->flags & ~DATA_FLAGS) &&
		     (h->bound == 0 || bound_valid(h)) && elem_size != 0 && h->block_size >= 1 &&
		     h->block_size <= job->max_block && sub_ok(h) && h->job_id == job->job_id &&
		     h->token == job->token && h->epoch == job->epoch && h->rank < job->world &&
		     h->lane < job->lanes && h->encoding == job->encoding && exp_ok(h);
	int next_ok = h->next == INA_BLOCK_END ||
		      (block_in_tensor(h, h->next) && mod_lanes(h->next, job->lanes) == h->lane);

	if (!in_job || !next_ok)
		return 0;
	if (h->block == INA_BLOCK_OPEN)
		return h->n_elems == 0 && size == INA_HDR_SIZE;
	return block_in_tensor(h, h->block) && mod_lanes(h->block, job->lanes) == h->lane &&
	       (h->next == INA_BLOCK_END || h->next > h->block) &&
	       (h->n_elems == 0 ||
		h->n_elems == ina_wire_block_elems(h->tensor_len, h->block_size, h->block)) &&
	       payload_check(buf, size, h, elem_size, 0) == INA_WIRE_OK;
}

enum ina_wire_reason
ina_wire_validate(const void *buf, size_t size, const struct ina_job_params *job, struct ina_hdr *h)
{
	enum ina_wire_reason r;

	if (size < INA_HDR_SIZE)
		return INA_WIRE_TRUNCATED;
	ina_wire_decode_hdr(buf, h);
	if (job && h->type == INA_T_DATA && data_ok(buf, size, h, job))
		return INA_WIRE_OK;
	r = validate_stateless(buf, size, h);
	if (r != INA_WIRE_OK || !job)
		return r;
	return validate_job(h, job);
}

static const char *const reason_names[] = {
	[INA_WIRE_OK] = "ok",
	[INA_WIRE_TRUNCATED] = "truncated",
	[INA_WIRE_BAD_VERSION] = "bad_version",
	[INA_WIRE_BAD_TYPE] = "bad_type",
	[INA_WIRE_BAD_FLAGS] = "bad_flags",
	[INA_WIRE_BAD_BOUND] = "bad_bound",
	[INA_WIRE_BAD_ENCODING] = "bad_encoding",
	[INA_WIRE_BAD_LENGTH] = "bad_length",
	[INA_WIRE_BAD_BLOCK_SIZE] = "bad_block_size",
	[INA_WIRE_BLOCK_PAST_TENSOR] = "block_past_tensor",
	[INA_WIRE_NEXT_NOT_PAST_BLOCK] = "next_not_past_block",
	[INA_WIRE_NEXT_PAST_TENSOR] = "next_past_tensor",
	[INA_WIRE_BAD_JOIN] = "bad_join",
	[INA_WIRE_WRONG_JOB] = "wrong_job",
	[INA_WIRE_WRONG_TOKEN] = "wrong_token",
	[INA_WIRE_WRONG_EPOCH] = "wrong_epoch",
	[INA_WIRE_RANK_PAST_WORLD] = "rank_past_world",
	[INA_WIRE_LANE_PAST_LANES] = "lane_past_lanes",
	[INA_WIRE_BLOCK_NOT_IN_LANE] = "block_not_in_lane",
	[INA_WIRE_NEXT_NOT_IN_LANE] = "next_not_in_lane",
	[INA_WIRE_WRONG_ENCODING] = "wrong_encoding",
	[INA_WIRE_BLOCK_TOO_BIG] = "block_too_big",
	[INA_WIRE_BAD_MASK] = "bad_mask",
	[INA_WIRE_BAD_EXP] = "bad_exp",
};
_Static_assert(sizeof(reason_names) / sizeof(reason_names[0]) == INA_WIRE_REASON_MAX,
	       "reason_names out of step with enum ina_wire_reason");

const char *
ina_wire_reason_name(enum ina_wire_reason r)
{
	if ((unsigned int)r >= INA_WIRE_REASON_MAX || !reason_names[r])
		return "unknown";
	return reason_names[r];
}

static const char *const type_names[] = {
	[INA_T_JOIN] = "join",	     [INA_T_JOIN_ACK] = "join_ack", [INA_T_DATA] = "data",
	[INA_T_RESULT] = "result",   [INA_T_WAIT] = "wait",	    [INA_T_FIN] = "fin",
	[INA_T_FIN_ACK] = "fin_ack", [INA_T_LEAVE] = "leave",	    [INA_T_ERROR] = "error",
	[INA_T_REPL] = "repl",	     [INA_T_FAILOVER] = "failover", [INA_T_KEEPALIVE] = "keepalive",
};
_Static_assert(sizeof(type_names) / sizeof(type_names[0]) == INA_T_MAX + 1,
	       "type_names out of step with enum ina_pkt_type");

const char *
ina_wire_type_name(uint8_t type)
{
	if (type > INA_T_MAX || !type_names[type])
		return "unknown";
	return type_names[type];
}

const char *
ina_wire_encoding_name(uint8_t encoding)
{
	const struct ina_encoding_ops *enc = ina_encoding(encoding);

	return enc ? enc->name : NULL;
}

uint8_t
ina_wire_encoding_parse(const char *name)
{
	uint8_t e;

	if (!name)
		return 0;
	for (e = 1; e <= INA_ENC_MAX; e++)
		if (strcmp(name, ina_encoding(e)->name) == 0)
			return e;
	return 0;
}
