/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the header decoder and the payload codecs
 * (common/src/wire.c, common/src/encode.c).
 *
 * Input: 12 control bytes, then the packet. The packet alone goes through
 * ina_wire_validate() without a job, then with job parameters built from the
 * control bytes (each of job id, token and epoch either copied from the
 * header, so the job checks can pass, or taken from the control bytes).
 * Checked, after docs/PROTOCOL.md sections 2 and 4:
 *  - a reason is one of enum ina_wire_reason, and has a name; a packet
 *    shorter than the header is 'truncated', and only that;
 *  - decode then encode gives back the header's 56 bytes, and the header the
 *    validator filled is the one ina_wire_decode_hdr() reads;
 *  - with a job, a packet the packet-alone checks refuse is refused for the
 *    same reason, and one they pass is accepted or refused for a job reason;
 *  - a packet that validates satisfies every rule of section 2 the validator
 *    promises: version, type, flags, bound, per-type size (a DATA or RESULT
 *    is exactly 56 + n_elems * elem_size bytes), JOIN payload ranges and its
 *    codec's round trip, block and next pointer within the tensor, and with a
 *    job: job id, token, epoch, rank, lane, lane membership, encoding, B;
 *  - on a valid DATA or RESULT payload: f32 get/put is a bit-exact round
 *    trip; bf16 get/put keeps every non-NaN and quiets a NaN with its sign;
 *    add into zeros gives what get gives and adding the payload twice gives
 *    x + x; i32 load/store round trips, add counts exactly the elements whose
 *    doubling overflows int32 and saturates them; i32 get/put with a small
 *    scale round trips values of at most 24 bits; scaling the payload's
 *    floats by ina_enc_i32_scale(exp, world) keeps every |q| within
 *    2^(30 - ceil(log2 world)); the result filter's raw bound keeps the
 *    order of bounds and ina_enc_f32_deferred() agrees with its definition;
 *  - a valid DATA, RESULT or REPL with sub-blocks (sub_log > 0, a payload;
 *    section 2.7): B is a multiple of 2^sub_log; the mask is not empty and
 *    names no sub-block past the block's last; ina_wire_mask_check()'s
 *    present elements are ina_sub_present_elems()'s and the payload is
 *    exactly the mask and their values; the runs of ina_sub_next_run() cover
 *    the mask's bits once, in order; ina_sub_decode() puts the present
 *    values where ina_sub_run_elems() says, zeroes the absent ones (or
 *    leaves them), and ina_sub_encode() of what it decoded gives back the
 *    payload (f32 bit for bit, bf16 but for a quieted NaN, i32 values of at
 *    most 24 bits); ina_sub_mask_nonzero() of the block names only present
 *    sub-blocks; the values pass the payload checks above.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "ina/encode.h"
#include "ina/encoding.h"
#include "ina/log.h"
#include "ina/subblock.h"
#include "ina/wire.h"

#define CTL_SIZE 12
#define MAX_ELEMS 65535

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static float fa[MAX_ELEMS], fb[MAX_ELEMS], fc[INA_BLOCK_MAX];
static int32_t ia[MAX_ELEMS], ib[MAX_ELEMS];
static uint8_t wb[INA_HDR_SIZE + 4 * MAX_ELEMS];

static int
hdr_equal(const struct ina_hdr *a, const struct ina_hdr *b)
{
	return a->version == b->version && a->type == b->type && a->encoding == b->encoding &&
	       a->flags == b->flags && a->job_id == b->job_id && a->epoch == b->epoch &&
	       a->rank == b->rank && a->lane == b->lane && a->tensor_id == b->tensor_id &&
	       a->round == b->round && a->tensor_len == b->tensor_len && a->block == b->block &&
	       a->next == b->next && a->block_size == b->block_size && a->sub_log == b->sub_log &&
	       a->n_elems == b->n_elems && a->exp == b->exp && a->status == b->status &&
	       a->bound == b->bound && a->token == b->token;
}

static uint32_t
f2u(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static float
u2f(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* Equal as values, NaN equal to NaN. */
static int
same_value(float a, float b)
{
	return (isnan(a) && isnan(b)) || a == b;
}

/* The rules of section 2 and 4.1 that a packet passing alone satisfies. */
static void
check_valid_alone(const uint8_t *buf, size_t size, const struct ina_hdr *h)
{
	FZ_CHECK(h->version == INA_WIRE_VERSION);
	FZ_CHECK(h->type >= 1 && h->type <= INA_T_MAX);
	FZ_CHECK(strcmp(ina_wire_type_name(h->type), "unknown") != 0);
	FZ_CHECK((h->flags & ~INA_F_KNOWN) == 0);
	if (h->flags & INA_F_DEFERRED)
		FZ_CHECK((h->type == INA_T_RESULT || h->type == INA_T_REPL) && h->n_elems == 0);
	if (h->flags & INA_F_STANDBY)
		FZ_CHECK(h->type == INA_T_JOIN || h->type == INA_T_JOIN_ACK);
	/* 0x40 is GRANT on a JOIN_ACK and RESHAPE on a RESULT (status: the
	 * lanes, >= 1; bound: the round); REDIRECT a JOIN_ACK's alone. */
	if (h->flags & INA_F_GRANT)
		FZ_CHECK(h->type == INA_T_JOIN_ACK || h->type == INA_T_RESULT);
	if (h->flags & INA_F_REDIRECT)
		FZ_CHECK(h->type == INA_T_JOIN_ACK && !(h->flags & INA_F_GRANT) &&
			 !(h->flags & INA_F_STANDBY));
	if (h->type == INA_T_RESULT && (h->flags & INA_F_RESHAPE)) {
		FZ_CHECK(h->status >= 1);
	} else if (h->bound) {
		FZ_CHECK(h->type == INA_T_DATA);
		if (h->encoding == INA_ENC_I32)
			FZ_CHECK(h->bound <= INT32_MAX);
		else
			FZ_CHECK(isfinite(u2f(h->bound)) && u2f(h->bound) >= 0.0f);
	}
	switch (h->type) {
	case INA_T_JOIN:
	case INA_T_JOIN_ACK: {
		uint16_t world, lanes, max_block;
		uint8_t again[sizeof(struct ina_wire_join)];

		FZ_CHECK(ina_wire_elem_size(h->encoding) != 0);
		FZ_CHECK(ina_wire_encoding_name(h->encoding) != NULL);
		FZ_CHECK(ina_wire_encoding_parse(ina_wire_encoding_name(h->encoding)) ==
			 h->encoding);
		FZ_CHECK(size == INA_HDR_SIZE + sizeof(struct ina_wire_join) +
					 ((h->flags & INA_F_REDIRECT)
						  ? sizeof(struct ina_wire_redirect)
						  : 0));
		ina_wire_decode_join(buf + INA_HDR_SIZE, &world, &lanes, &max_block);
		FZ_CHECK(world >= 1 && world <= INA_MAX_WORLD && lanes >= 1 && max_block >= 1);
		if (h->type == INA_T_JOIN)
			FZ_CHECK(h->rank < world);
		/* 'reserved' is the ssp byte and the weight byte, so the codec
		 * gives the bytes back. */
		FZ_CHECK(ina_wire_join_ssp(buf + INA_HDR_SIZE) <= INA_SSP_MAX);
		ina_wire_encode_join(world, lanes, max_block, again);
		ina_wire_join_set_ssp(again, ina_wire_join_ssp(buf + INA_HDR_SIZE));
		ina_wire_join_set_weight(again, ina_wire_join_weight(buf + INA_HDR_SIZE));
		FZ_CHECK(memcmp(again, buf + INA_HDR_SIZE, sizeof(again)) == 0);
		if (h->flags & INA_F_REDIRECT) {
			/* somewhere to go, and the codec gives it back */
			const uint8_t *rd = buf + INA_HDR_SIZE + sizeof(struct ina_wire_join);
			uint8_t rd_again[sizeof(struct ina_wire_redirect)];
			uint32_t ip;
			uint16_t port;

			ina_wire_decode_redirect(rd, &ip, &port);
			FZ_CHECK(ip != 0 && port != 0);
			ina_wire_encode_redirect(ip, port, rd_again);
			FZ_CHECK(memcmp(rd_again, rd, sizeof(rd_again)) == 0);
		}
		break;
	}
	case INA_T_DATA:
	case INA_T_RESULT:
	case INA_T_REPL: {
		size_t es = ina_wire_elem_size(h->encoding);
		uint32_t nb = ina_wire_nb_blocks(h->tensor_len, h->block_size);

		FZ_CHECK(es == 2 || es == 4);
		FZ_CHECK(h->block_size >= 1 && h->block_size <= INA_BLOCK_MAX);
		FZ_CHECK(h->block_size % (1u << h->sub_log) == 0);
		/* The exponent: in range where it names a block, else 0. */
		if (h->encoding == INA_ENC_I32 && h->next != INA_BLOCK_END)
			FZ_CHECK(h->exp >= INA_EXP_MIN && h->exp <= INA_EXP_MAX);
		else
			FZ_CHECK(h->exp == 0);
		if (h->sub_log == 0 || h->n_elems == 0)
			FZ_CHECK(size ==
				 INA_HDR_SIZE + (size_t)h->n_elems * es +
					 ((h->flags & INA_F_PARTIAL) ? INA_PARTIAL_TRAILER : 0));
		else /* the mask and at least one element (check_sub()) */
			FZ_CHECK(size > INA_HDR_SIZE + ina_wire_mask_bytes(h->sub_log));
		if (h->flags & INA_F_PARTIAL)
			FZ_CHECK(h->type != INA_T_DATA && h->block != INA_BLOCK_OPEN);
		if (h->block == INA_BLOCK_OPEN) {
			FZ_CHECK(h->n_elems == 0);
		} else {
			FZ_CHECK(h->block < nb);
			FZ_CHECK((uint64_t)h->block * h->block_size < h->tensor_len);
			FZ_CHECK(h->n_elems == 0 ||
				 h->n_elems == ina_wire_block_elems(h->tensor_len, h->block_size,
								    h->block));
			FZ_CHECK(h->n_elems <= h->block_size);
			if (h->next != INA_BLOCK_END)
				FZ_CHECK(h->next > h->block);
		}
		if (h->next != INA_BLOCK_END)
			FZ_CHECK(h->next < nb);
		break;
	}
	case INA_T_WAIT:
		FZ_CHECK(size == INA_HDR_SIZE + INA_WAIT_PAYLOAD);
		break;
	case INA_T_FIN:
	case INA_T_FIN_ACK:
	case INA_T_LEAVE:
	case INA_T_FAILOVER:
		FZ_CHECK(size == INA_HDR_SIZE);
		break;
	case INA_T_KEEPALIVE:
		/* the bare header, no flag */
		FZ_CHECK(size == INA_HDR_SIZE && h->flags == 0);
		break;
	default:
		FZ_CHECK(h->type == INA_T_ERROR);
		FZ_CHECK(size <= INA_HDR_SIZE + INA_ERROR_MSG_MAX);
		break;
	}
}

/* The job rules of 4.1 (13 to 21) that a packet passing with 'job' satisfies. */
static void
check_valid_job(const struct ina_hdr *h, const struct ina_job_params *job)
{
	FZ_CHECK(h->job_id == job->job_id);
	FZ_CHECK(h->token == job->token);
	/* A replica's FAILOVER announces a new epoch. */
	if (h->type != INA_T_JOIN && !(h->type == INA_T_FAILOVER && h->rank == INA_RANK_SWITCH))
		FZ_CHECK(h->epoch == job->epoch);
	if (h->type == INA_T_JOIN || h->type == INA_T_DATA || h->type == INA_T_FIN ||
	    h->type == INA_T_LEAVE || h->type == INA_T_KEEPALIVE)
		FZ_CHECK(h->rank < job->world);
	else if (h->type == INA_T_REPL)
		FZ_CHECK(h->rank < job->world || h->rank == INA_RANK_ALL);
	else if (h->type == INA_T_FAILOVER)
		FZ_CHECK(h->rank < job->world || h->rank == INA_RANK_SWITCH);
	else
		FZ_CHECK(h->rank == INA_RANK_SWITCH);
	if (h->type == INA_T_DATA || h->type == INA_T_RESULT || h->type == INA_T_REPL ||
	    h->type == INA_T_WAIT) {
		FZ_CHECK(h->lane < job->lanes);
		if (h->block != INA_BLOCK_OPEN)
			FZ_CHECK(h->block % job->lanes == h->lane);
	}
	if (h->type == INA_T_DATA || h->type == INA_T_RESULT || h->type == INA_T_REPL) {
		if (h->next != INA_BLOCK_END)
			FZ_CHECK(h->next % job->lanes == h->lane);
		FZ_CHECK(h->encoding == job->encoding);
		FZ_CHECK(h->block_size <= job->max_block);
	}
	/* RESHAPE gives lanes back: fewer than the job has */
	if (h->type == INA_T_RESULT && (h->flags & INA_F_RESHAPE))
		FZ_CHECK(h->status < job->lanes);
}

static void
check_f32(const uint8_t *pl, size_t n)
{
	ina_enc_f32_get(fa, pl, n);
	ina_enc_f32_put(wb, fa, n);
	FZ_CHECK(memcmp(wb, pl, 4 * n) == 0);
	memset(fb, 0, n * sizeof(float));
	ina_enc_f32_add(fb, pl, n);
	for (size_t i = 0; i < n; i++)
		FZ_CHECK(same_value(fb[i], fa[i]));
	ina_enc_f32_add(fb, pl, n);
	for (size_t i = 0; i < n; i++)
		FZ_CHECK(same_value(fb[i], fa[i] + fa[i]));
}

static void
check_bf16(const uint8_t *pl, size_t n)
{
	ina_enc_bf16_get(fa, pl, n);
	ina_enc_bf16_put(wb, fa, n);
	for (size_t i = 0; i < n; i++) {
		uint16_t in = (uint16_t)(pl[2 * i] << 8 | pl[2 * i + 1]);
		uint16_t out = (uint16_t)(wb[2 * i] << 8 | wb[2 * i + 1]);

		FZ_CHECK(f2u(fa[i]) == (uint32_t)in << 16); /* widening is exact */
		FZ_CHECK(ina_enc_bf16_round(fa[i]) == out);
		if (isnan(fa[i]))
			FZ_CHECK(out == (in | 0x0040u));
		else
			FZ_CHECK(out == in);
	}
	memset(fb, 0, n * sizeof(float));
	ina_enc_bf16_add(fb, pl, n);
	for (size_t i = 0; i < n; i++)
		FZ_CHECK(same_value(fb[i], fa[i]));
	ina_enc_bf16_add(fb, pl, n);
	for (size_t i = 0; i < n; i++)
		FZ_CHECK(same_value(fb[i], fa[i] + fa[i]));
}

static void
check_i32(const uint8_t *pl, size_t n, int scale)
{
	size_t sat = 0, got;

	ina_enc_i32_load(ia, pl, n);
	ina_enc_i32_store(wb, ia, n);
	FZ_CHECK(memcmp(wb, pl, 4 * n) == 0);
	memset(ib, 0, n * sizeof(int32_t));
	FZ_CHECK(ina_enc_i32_add(ib, pl, n) == 0);
	FZ_CHECK(memcmp(ia, ib, n * sizeof(int32_t)) == 0);
	got = ina_enc_i32_add(ib, pl, n);
	for (size_t i = 0; i < n; i++) {
		int64_t want = 2 * (int64_t)ia[i];

		if (want > INT32_MAX) {
			want = INT32_MAX;
			sat++;
		} else if (want < INT32_MIN) {
			want = INT32_MIN;
			sat++;
		}
		FZ_CHECK(ib[i] == want);
	}
	FZ_CHECK(got == sat);
	/* Values of at most 24 bits survive get and put at a small scale. */
	ina_enc_i32_get(fa, pl, n, scale);
	ina_enc_i32_acc_get(fb, ia, n, scale);
	ina_enc_i32_put(wb, fa, n, scale);
	for (size_t i = 0; i < n; i++) {
		FZ_CHECK(f2u(fa[i]) == f2u(fb[i]));
		if (ia[i] >= -(1 << 24) && ia[i] <= (1 << 24)) {
			int32_t q = (int32_t)((uint32_t)wb[4 * i] << 24 |
					      (uint32_t)wb[4 * i + 1] << 16 |
					      (uint32_t)wb[4 * i + 2] << 8 | wb[4 * i + 3]);

			FZ_CHECK(q == ia[i]);
		}
	}
}

/* Scaling floats as an i32 worker does keeps the documented headroom. */
static void
check_i32_scale(const float *x, size_t n, unsigned world)
{
	int e = ina_enc_i32_exp(x, n);
	int s = ina_enc_i32_scale(e, world);
	int lw = world <= 1 ? 0 : 32 - __builtin_clz(world - 1);
	int64_t lim = (int64_t)1 << (30 - lw);
	int finite = 1, zero = 1;

	for (size_t i = 0; i < n; i++) {
		finite &= isfinite(x[i]) != 0;
		zero &= x[i] == 0.0f;
	}
	if (!finite) {
		FZ_CHECK(e == INA_EXP_NONFINITE);
		return;
	}
	if (zero) {
		FZ_CHECK(e == INA_EXP_ZERO);
		return;
	}
	for (size_t i = 0; i < n; i++)
		FZ_CHECK(fabs((double)x[i]) < ldexp(1.0, e));
	ina_enc_i32_put(wb, x, n, s);
	ina_enc_i32_load(ia, wb, n);
	for (size_t i = 0; i < n; i++)
		FZ_CHECK(ia[i] <= lim && ia[i] >= -lim);
}

/* The result filter: raw bounds order like bounds; deferred as defined. */
static void
check_filter(const float *x, size_t n, uint32_t raw_a, uint32_t raw_b, uint8_t enc)
{
	float a = u2f(raw_a), b = u2f(raw_b);
	int nonzero = 0, under = 1;

	if (isfinite(a) && isfinite(b) && a > 0 && b > 0) {
		uint32_t ra = ina_enc_bound(enc, a, 0), rb = ina_enc_bound(enc, b, 0);

		if (a < b)
			FZ_CHECK(ra <= rb);
		if (enc != INA_ENC_I32)
			FZ_CHECK(ina_enc_bound_f32(ra) == a);
	}
	if (!(a > 0))
		FZ_CHECK(ina_enc_bound(enc, a, 0) == 0);
	for (size_t i = 0; i < n; i++) {
		under &= fabsf(x[i]) < a;
		nonzero |= x[i] != 0.0f;
	}
	FZ_CHECK(ina_enc_f32_deferred(x, n, a) == (under && nonzero));
}

static void
check_payload(const uint8_t *pl, size_t n, const struct ina_hdr *h, const uint8_t *ctl)
{
	int scale = (int)(int8_t)ctl[10] / 2; /* -64..63: exact in a double */

	switch (h->encoding) {
	case INA_ENC_F32:
		check_f32(pl, n);
		ina_enc_f32_get(fa, pl, n);
		break;
	case INA_ENC_BF16:
		check_bf16(pl, n);
		ina_enc_bf16_get(fa, pl, n);
		break;
	default:
		check_i32(pl, n, scale);
		ina_enc_f32_get(fa, pl, n); /* the same bits as floats */
		break;
	}
	check_i32_scale(fa, n, 1u + ctl[11] % INA_MAX_WORLD);
	check_filter(fa, n, h->bound,
		     (uint32_t)ctl[8] << 24 | (uint32_t)ctl[9] << 16 | h->bound >> 16, h->encoding);
}

/* The sub-block payload of a valid block packet (sub_log > 0, n_elems > 0). */
static void
check_sub(const uint8_t *buf, size_t size, const struct ina_hdr *h, const uint8_t *ctl)
{
	const struct ina_encoding_ops *enc = ina_encoding(h->encoding);
	const uint8_t *pl = buf + INA_HDR_SIZE;
	struct ina_sub_cut c;
	struct ina_sub_mask m, got, nz;
	uint32_t present = 0, bits = 0, run_bits = 0, run_elems = 0, from = 0, first, len;
	uint32_t b = ina_wire_sub_elems(h->block_size, h->sub_log), prev_end = 0;
	size_t trailer = (h->flags & INA_F_PARTIAL) ? INA_PARTIAL_TRAILER : 0, vals;
	int scale = (int)(int8_t)ctl[10] / 2;

	FZ_CHECK(enc != NULL && b >= 1 && h->n_elems <= h->block_size);
	c = ina_sub_cut(h->block_size, h->sub_log, h->n_elems);
	FZ_CHECK(c.b == b && c.count >= 1 && c.count <= (1u << h->sub_log));
	FZ_CHECK(c.mask_bytes == ina_wire_mask_bytes(h->sub_log) && c.mask_bytes * 8 >= c.count);
	FZ_CHECK(ina_wire_mask_check(pl, h->sub_log, b, h->n_elems, &present) == INA_WIRE_OK);
	ina_sub_mask_read(&m, pl, &c);
	FZ_CHECK(!ina_sub_mask_empty(&m));
	for (uint32_t i = 0; i < INA_SUB_MAX; i++) {
		if (ina_sub_mask_test(&m, i)) {
			FZ_CHECK(i < c.count);
			bits++;
		}
	}
	for (uint32_t i = 0; i < c.mask_bytes; i++)
		run_bits += (uint32_t)__builtin_popcount(pl[i]);
	FZ_CHECK(run_bits == bits);
	FZ_CHECK(present == ina_sub_present_elems(&m, &c));
	FZ_CHECK(present >= 1 && present <= h->n_elems);
	FZ_CHECK(size == INA_HDR_SIZE + c.mask_bytes + (size_t)present * enc->elem_size + trailer);

	/* the runs: maximal, in order, each bit once, their elements in the block */
	run_bits = 0;
	while (ina_sub_next_run(&m, &c, &from, &first, &len)) {
		uint32_t start, n;

		FZ_CHECK(len >= 1 && first + len <= c.count && from >= first + len);
		FZ_CHECK(first == 0 || run_bits == 0 || first > prev_end);
		for (uint32_t i = first; i < first + len; i++)
			FZ_CHECK(ina_sub_mask_test(&m, i));
		FZ_CHECK(first + len == c.count || !ina_sub_mask_test(&m, first + len));
		ina_sub_run_elems(&c, first, len, &start, &n);
		FZ_CHECK(start == first * b && n >= 1 && start + n <= h->n_elems);
		run_bits += len;
		run_elems += n;
		prev_end = first + len;
	}
	FZ_CHECK(run_bits == bits && run_elems == present);

	/* decode: present values in place, the absent ones zeroed or kept */
	for (uint32_t i = 0; i < c.n; i++)
		fc[i] = 42.0f;
	got = ina_sub_decode(fc, pl, &c, enc, scale, 0);
	FZ_CHECK(memcmp(&got, &m, sizeof(m)) == 0);
	from = 0;
	vals = 0;
	while (ina_sub_next_run(&m, &c, &from, &first, &len)) {
		uint32_t start, n;

		ina_sub_run_elems(&c, first, len, &start, &n);
		enc->decode(fb, pl + c.mask_bytes + vals * enc->elem_size, n, scale);
		for (uint32_t i = 0; i < n; i++)
			FZ_CHECK(f2u(fc[start + i]) == f2u(fb[i]));
		vals += n;
	}
	for (uint32_t i = 0; i < c.count; i++) {
		uint32_t start, n;

		if (ina_sub_mask_test(&m, i))
			continue;
		ina_sub_run_elems(&c, i, 1, &start, &n);
		for (uint32_t j = start; j < start + n; j++)
			FZ_CHECK(fc[j] == 42.0f);
	}
	got = ina_sub_decode(fc, pl, &c, enc, scale, 1);
	for (uint32_t i = 0; i < c.count; i++) {
		uint32_t start, n;

		if (ina_sub_mask_test(&m, i))
			continue;
		ina_sub_run_elems(&c, i, 1, &start, &n);
		for (uint32_t j = start; j < start + n; j++)
			FZ_CHECK(f2u(fc[j]) == 0);
	}
	/* the block's non-zero sub-blocks are among the present ones */
	ina_sub_mask_nonzero(&nz, fc, &c);
	FZ_CHECK(((nz.w[0] & ~m.w[0]) | (nz.w[1] & ~m.w[1])) == 0);

	/* encode what was decoded: the payload again */
	FZ_CHECK(ina_sub_encode(wb, fc, &m, &c, enc, scale) ==
		 c.mask_bytes + vals * enc->elem_size);
	FZ_CHECK(memcmp(wb, pl, c.mask_bytes) == 0);
	for (size_t i = 0; i < vals; i++) {
		const uint8_t *in = pl + c.mask_bytes + i * enc->elem_size;
		const uint8_t *out = wb + c.mask_bytes + i * enc->elem_size;

		if (h->encoding == INA_ENC_F32) {
			FZ_CHECK(memcmp(in, out, 4) == 0);
		} else if (h->encoding == INA_ENC_BF16) {
			uint16_t a = (uint16_t)(in[0] << 8 | in[1]),
				 o = (uint16_t)(out[0] << 8 | out[1]);

			FZ_CHECK(o == a ||
				 ((a & 0x7f80u) == 0x7f80u && (a & 0x7fu) && o == (a | 0x40u)));
		} else {
			int32_t a = (int32_t)((uint32_t)in[0] << 24 | (uint32_t)in[1] << 16 |
					      (uint32_t)in[2] << 8 | in[3]);
			int32_t o = (int32_t)((uint32_t)out[0] << 24 | (uint32_t)out[1] << 16 |
					      (uint32_t)out[2] << 8 | out[3]);

			if (a >= -(1 << 24) && a <= (1 << 24))
				FZ_CHECK(o == a);
		}
	}
	check_payload(pl + c.mask_bytes, vals, h, ctl);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	ina_log_set_level(INA_LOG_ERR);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t ctl[CTL_SIZE] = { 0 };
	struct ina_hdr h, hj, hd;
	struct ina_job_params job;
	enum ina_wire_reason r, rj;
	uint8_t *buf;
	size_t len;

	if (size >= CTL_SIZE) {
		memcpy(ctl, data, CTL_SIZE);
		data += CTL_SIZE;
		size -= CTL_SIZE;
	}
	if (size > sizeof(wb))
		return -1;
	/* A heap copy of exactly the packet's size: a read past it is a report. */
	len = size;
	buf = malloc(len ? len : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, len);

	memset(&h, 0, sizeof(h));
	r = ina_wire_validate(buf, len, NULL, &h);
	FZ_CHECK((unsigned)r < INA_WIRE_REASON_MAX);
	FZ_CHECK(strcmp(ina_wire_reason_name(r), "unknown") != 0);
	FZ_CHECK((r == INA_WIRE_TRUNCATED) == (len < INA_HDR_SIZE));
	if (len >= INA_HDR_SIZE) {
		uint8_t again[INA_HDR_SIZE];

		ina_wire_decode_hdr(buf, &hd);
		FZ_CHECK(hdr_equal(&h, &hd));
		ina_wire_encode_hdr(&h, again);
		FZ_CHECK(memcmp(again, buf, INA_HDR_SIZE) == 0);
	}
	if (r == INA_WIRE_OK) {
		check_valid_alone(buf, len, &h);
		if ((h.type == INA_T_DATA || h.type == INA_T_RESULT || h.type == INA_T_REPL) &&
		    h.sub_log && h.n_elems)
			check_sub(buf, len, &h, ctl);
		else if (h.type == INA_T_DATA || h.type == INA_T_RESULT)
			check_payload(buf + INA_HDR_SIZE, h.n_elems, &h, ctl);
	}

	/* Again with a job: each of id, token, epoch from the header or the
	 * control bytes, so that the job checks pass or fail at each step. */
	memset(&job, 0, sizeof(job));
	job.job_id = (ctl[0] & 1) ? (uint32_t)ctl[1] : h.job_id;
	job.token = (ctl[0] & 2) ? (uint64_t)ctl[2] : h.token;
	job.epoch = (ctl[0] & 4) ? (uint32_t)ctl[3] : h.epoch;
	job.world = (uint16_t)(1 + ctl[4] % INA_MAX_WORLD);
	job.lanes = (uint16_t)(1 + ((ctl[5] << 8 | ctl[6]) % 4096));
	job.max_block = (uint16_t)(1 + ((ctl[7] << 8 | ctl[8]) % 4096));
	job.encoding = (ctl[0] & 8) ? (uint8_t)(ctl[9] % 5) : h.encoding;
	memset(&hj, 0, sizeof(hj));
	rj = ina_wire_validate(buf, len, &job, &hj);
	FZ_CHECK((unsigned)rj < INA_WIRE_REASON_MAX);
	if (len >= INA_HDR_SIZE)
		FZ_CHECK(hdr_equal(&h, &hj));
	if (r != INA_WIRE_OK)
		FZ_CHECK(rj == r);
	else if (rj != INA_WIRE_OK)
		FZ_CHECK(rj >= INA_WIRE_WRONG_JOB && rj <= INA_WIRE_BLOCK_TOO_BIG);
	else
		check_valid_job(&hj, &job);
	free(buf);
	return 0;
}
