/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the wire format (common/src/wire.c): the header against
 * hand-written golden bytes, the JOIN payload codec, one packet per rejection
 * reason that is valid but for that one defect, valid packets of every type,
 * the replica's packets (REPL, FAILOVER, the STANDBY flag), and a fixed-seed
 * random-bytes loop for the sanitizer build.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ina/encode.h"
#include "ina/wire.h"

/* The job every test packet claims to belong to. */
#define JOB_ID 0x0000c0deu
#define EPOCH 3u
#define TOKEN 0x0123456789abcdefull
#define WORLD 4
#define LANES 3
#define MAX_BLOCK 64
/* A tensor of 7 blocks of 16; the last one (6, in lane 0) holds 4 elements. */
#define TLEN 100
#define BSIZE 16
#define NB 7

static const struct ina_job_params job = {
	.job_id = JOB_ID,
	.epoch = EPOCH,
	.token = TOKEN,
	.world = WORLD,
	.lanes = LANES,
	.max_block = MAX_BLOCK,
	.encoding = INA_ENC_F32,
};

struct pkt {
	struct ina_hdr h;
	size_t size;
	uint8_t buf[INA_HDR_SIZE + 4 * 1024];
};

/* Encodes p->h into p->buf; the payload bytes stay as they are. */
static void
pkt_build(struct pkt *p)
{
	ina_wire_encode_hdr(&p->h, p->buf);
}

/* Sets the element count and the size that goes with it. */
static void
pkt_set_elems(struct pkt *p, uint16_t n_elems)
{
	p->h.n_elems = n_elems;
	p->size = INA_HDR_SIZE + (size_t)n_elems * 4;
}

/* A valid packet of 'type' for 'job', built. DATA, RESULT and REPL carry
 * block 1 of lane 1, full, with next block 4; a REPL goes to every rank. A
 * FAILOVER is a worker's (the announcement's epoch is not checked). */
static void
pkt_init(struct pkt *p, uint8_t type)
{
	size_t i;

	memset(p, 0, sizeof(*p));
	for (i = INA_HDR_SIZE; i < sizeof(p->buf); i++)
		p->buf[i] = (uint8_t)(i * 7);
	p->h.version = INA_WIRE_VERSION;
	p->h.type = type;
	p->h.job_id = JOB_ID;
	p->h.epoch = EPOCH;
	p->h.token = TOKEN;
	p->h.rank = INA_RANK_SWITCH;
	p->h.tensor_id = 42;
	p->h.round = 9;
	p->size = INA_HDR_SIZE;
	switch (type) {
	case INA_T_JOIN:
	case INA_T_JOIN_ACK:
		p->h.encoding = INA_ENC_F32;
		if (type == INA_T_JOIN) {
			p->h.epoch = 0;
			p->h.rank = 2;
		}
		ina_wire_encode_join(WORLD, LANES, MAX_BLOCK, p->buf + INA_HDR_SIZE);
		p->size = INA_HDR_SIZE + 8;
		break;
	case INA_T_DATA:
	case INA_T_RESULT:
	case INA_T_REPL:
		if (type == INA_T_DATA)
			p->h.rank = 1;
		if (type == INA_T_REPL)
			p->h.rank = INA_RANK_ALL;
		p->h.encoding = INA_ENC_F32;
		p->h.flags = INA_F_VER;
		p->h.lane = 1;
		p->h.tensor_len = TLEN;
		p->h.block_size = BSIZE;
		p->h.block = 1;
		p->h.next = 4;
		pkt_set_elems(p, BSIZE);
		break;
	case INA_T_WAIT:
		p->size = INA_HDR_SIZE + INA_WAIT_PAYLOAD;
		break;
	case INA_T_FIN:
	case INA_T_LEAVE:
	case INA_T_FAILOVER:
	case INA_T_KEEPALIVE:
		p->h.rank = 3;
		break;
	case INA_T_ERROR:
		p->h.status = INA_WERR_NO_SLOTS;
		memcpy(p->buf + INA_HDR_SIZE, "no slots", 8);
		p->size = INA_HDR_SIZE + 8;
		break;
	default:
		break;
	}
	pkt_build(p);
}

static void
expect(const struct pkt *p, const struct ina_job_params *j, enum ina_wire_reason want)
{
	struct ina_hdr h;
	enum ina_wire_reason r;

	r = ina_wire_validate(p->buf, p->size, j, &h);
	assert_string_equal(ina_wire_reason_name(r), ina_wire_reason_name(want));
	assert_int_equal(r, want);
}

/* A defect the packet alone shows: rejected with and without the job. */
static void
expect_stateless(const struct pkt *p, enum ina_wire_reason want)
{
	expect(p, NULL, want);
	expect(p, &job, want);
}

/* A defect only the job shows: fine alone, rejected against the job. */
static void
expect_stateful(const struct pkt *p, enum ina_wire_reason want)
{
	expect(p, NULL, INA_WIRE_OK);
	expect(p, &job, want);
}

/* A header with a distinctive value in every field. */
static const struct ina_hdr golden_hdr = {
	.version = 0x02,
	.type = 0x03,
	.encoding = 0x02,
	.flags = 0x05,
	.job_id = 0x11223344u,
	.epoch = 0x55667788u,
	.rank = 0x99aa,
	.lane = 0xbbcc,
	.tensor_id = 0xddeeff01u,
	.round = 0x02030405u,
	.tensor_len = 0x06070809u,
	.block = 0x0a0b0c0du,
	.next = 0x0e0f1011u,
	.block_size = 0x1213,
	.n_elems = 0x1415,
	.exp = -300, /* 0xfed4 */
	.status = 0x1617,
	.bound = 0x18191a1bu,
	.token = 0x1c1d1e1f20212223ull,
};

/* golden_hdr as it lies on the wire, written from the offsets in wire.h. */
static const uint8_t golden_bytes[INA_HDR_SIZE] = {
	0x02, 0x03, 0x02, 0x05,				/*  0 version type encoding flags */
	0x11, 0x22, 0x33, 0x44,				/*  4 job_id */
	0x55, 0x66, 0x77, 0x88,				/*  8 epoch */
	0x99, 0xaa, 0xbb, 0xcc,				/* 12 rank lane */
	0xdd, 0xee, 0xff, 0x01,				/* 16 tensor_id */
	0x02, 0x03, 0x04, 0x05,				/* 20 round */
	0x06, 0x07, 0x08, 0x09,				/* 24 tensor_len */
	0x0a, 0x0b, 0x0c, 0x0d,				/* 28 block */
	0x0e, 0x0f, 0x10, 0x11,				/* 32 next */
	0x12, 0x13, 0x14, 0x15,				/* 36 block_size n_elems */
	0xfe, 0xd4, 0x16, 0x17,				/* 40 exp status */
	0x18, 0x19, 0x1a, 0x1b,				/* 44 bound */
	0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x21, 0x22, 0x23, /* 48 token */
};

static void
assert_hdr_equal(const struct ina_hdr *a, const struct ina_hdr *b)
{
	assert_int_equal(a->version, b->version);
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->encoding, b->encoding);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->job_id, b->job_id);
	assert_int_equal(a->epoch, b->epoch);
	assert_int_equal(a->rank, b->rank);
	assert_int_equal(a->lane, b->lane);
	assert_int_equal(a->tensor_id, b->tensor_id);
	assert_int_equal(a->round, b->round);
	assert_int_equal(a->tensor_len, b->tensor_len);
	assert_int_equal(a->block, b->block);
	assert_int_equal(a->next, b->next);
	assert_int_equal(a->block_size, b->block_size);
	assert_int_equal(a->n_elems, b->n_elems);
	assert_int_equal(a->exp, b->exp);
	assert_int_equal(a->status, b->status);
	assert_int_equal(a->bound, b->bound);
	assert_true(a->token == b->token);
}

static void
test_wire_encode_golden(void **state)
{
	uint8_t buf[INA_HDR_SIZE + 2];

	(void)state;
	memset(buf, 0xa5, sizeof(buf));
	/* Odd address: the encoder must not assume alignment. */
	ina_wire_encode_hdr(&golden_hdr, buf + 1);
	assert_memory_equal(buf + 1, golden_bytes, INA_HDR_SIZE);
	assert_int_equal(buf[0], 0xa5);
	assert_int_equal(buf[INA_HDR_SIZE + 1], 0xa5);
}

static void
test_wire_decode_golden(void **state)
{
	uint8_t buf[INA_HDR_SIZE + 1];
	struct ina_hdr h;

	(void)state;
	memcpy(buf + 1, golden_bytes, INA_HDR_SIZE);
	memset(&h, 0, sizeof(h));
	ina_wire_decode_hdr(buf + 1, &h);
	assert_int_equal(h.version, 0x02);
	assert_int_equal(h.type, 0x03);
	assert_int_equal(h.encoding, 0x02);
	assert_int_equal(h.flags, 0x05);
	assert_int_equal(h.job_id, 0x11223344u);
	assert_int_equal(h.epoch, 0x55667788u);
	assert_int_equal(h.rank, 0x99aa);
	assert_int_equal(h.lane, 0xbbcc);
	assert_int_equal(h.tensor_id, 0xddeeff01u);
	assert_int_equal(h.round, 0x02030405u);
	assert_int_equal(h.tensor_len, 0x06070809u);
	assert_int_equal(h.block, 0x0a0b0c0du);
	assert_int_equal(h.next, 0x0e0f1011u);
	assert_int_equal(h.block_size, 0x1213);
	assert_int_equal(h.n_elems, 0x1415);
	assert_true(h.exp == -300);
	assert_int_equal(h.status, 0x1617);
	assert_int_equal(h.bound, 0x18191a1bu);
	assert_true(h.token == 0x1c1d1e1f20212223ull);
}

static void
test_wire_round_trip(void **state)
{
	struct ina_hdr a, b;
	uint8_t buf[INA_HDR_SIZE], buf2[INA_HDR_SIZE];
	unsigned int i, k;

	(void)state;
	/* Every byte value in every position, via shifted patterns. */
	for (k = 0; k < 256; k++) {
		for (i = 0; i < INA_HDR_SIZE; i++)
			buf[i] = (uint8_t)(k + i * 37);
		ina_wire_decode_hdr(buf, &a);
		ina_wire_encode_hdr(&a, buf2);
		assert_memory_equal(buf, buf2, INA_HDR_SIZE);
		ina_wire_decode_hdr(buf2, &b);
		assert_hdr_equal(&a, &b);
	}
	ina_wire_encode_hdr(&golden_hdr, buf);
	ina_wire_decode_hdr(buf, &a);
	assert_hdr_equal(&a, &golden_hdr);
}

static void
test_wire_join_codec(void **state)
{
	static const uint8_t want[8] = { 0x00, 0x40, 0x01, 0x02, 0x01, 0x68, 0x00, 0x00 };
	uint8_t buf[9];
	uint16_t world, lanes, max_block;

	(void)state;
	memset(buf, 0xff, sizeof(buf));
	ina_wire_encode_join(64, 0x0102, 360, buf + 1);
	assert_memory_equal(buf + 1, want, 8);
	assert_int_equal(buf[0], 0xff);
	world = lanes = max_block = 0;
	ina_wire_decode_join(buf + 1, &world, &lanes, &max_block);
	assert_int_equal(world, 64);
	assert_int_equal(lanes, 0x0102);
	assert_int_equal(max_block, 360);
}

static void
test_wire_elem_size(void **state)
{
	(void)state;
	assert_int_equal(ina_wire_elem_size(INA_ENC_F32), 4);
	assert_int_equal(ina_wire_elem_size(INA_ENC_I32), 4);
	assert_int_equal(ina_wire_elem_size(INA_ENC_BF16), 2);
	assert_int_equal(ina_wire_elem_size(0), 0);
	assert_int_equal(ina_wire_elem_size(INA_ENC_MAX + 1), 0);
	assert_int_equal(ina_wire_elem_size(255), 0);
}

static void
test_wire_valid_every_type(void **state)
{
	struct pkt p;
	uint8_t t;

	(void)state;
	for (t = 1; t <= INA_T_MAX; t++) {
		pkt_init(&p, t);
		expect(&p, NULL, INA_WIRE_OK);
		expect(&p, &job, INA_WIRE_OK);
	}
}

static void
test_wire_valid_fills_hdr(void **state)
{
	struct ina_hdr h;
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	memset(&h, 0, sizeof(h));
	assert_int_equal(ina_wire_validate(p.buf, p.size, &job, &h), INA_WIRE_OK);
	assert_hdr_equal(&h, &p.h);

	/* Filled too when rejected after the header could be read. */
	p.h.version = 7;
	pkt_build(&p);
	memset(&h, 0, sizeof(h));
	assert_int_equal(ina_wire_validate(p.buf, p.size, &job, &h), INA_WIRE_BAD_VERSION);
	assert_hdr_equal(&h, &p.h);
}

static void
test_wire_valid_variants(void **state)
{
	struct pkt p;

	(void)state;
	/* Every known flag a RESULT may carry, the i32 encoding, the largest
	 * error message. */
	pkt_init(&p, INA_T_RESULT);
	p.h.flags = INA_F_KNOWN & ~INA_F_STANDBY & ~INA_F_PARTIAL & ~INA_F_GRANT & ~INA_F_REDIRECT;
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);

	pkt_init(&p, INA_T_DATA);
	p.h.encoding = INA_ENC_I32;
	p.h.exp = -12;
	pkt_build(&p);
	expect(&p, NULL, INA_WIRE_OK);

	pkt_init(&p, INA_T_ERROR);
	p.size = INA_HDR_SIZE;
	expect(&p, &job, INA_WIRE_OK);
	p.size = INA_HDR_SIZE + INA_ERROR_MSG_MAX;
	expect(&p, &job, INA_WIRE_OK);

	/* A JOIN carries epoch 0, whatever the job's epoch is. */
	pkt_init(&p, INA_T_JOIN);
	p.h.epoch = 12345;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);

	/* The largest world, and rank 0. */
	pkt_init(&p, INA_T_JOIN);
	p.h.rank = INA_MAX_WORLD - 1;
	ina_wire_encode_join(INA_MAX_WORLD, 1, 1, p.buf + INA_HDR_SIZE);
	pkt_build(&p);
	expect(&p, NULL, INA_WIRE_OK);
	pkt_init(&p, INA_T_DATA);
	p.h.rank = 0;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);

	/* A block size of exactly the job's maximum. */
	pkt_init(&p, INA_T_DATA);
	p.h.lane = 0;
	p.h.block = 0;
	p.h.next = INA_BLOCK_END;
	p.h.block_size = MAX_BLOCK;
	pkt_set_elems(&p, MAX_BLOCK);
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
}

static void
test_wire_empty_ack(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);

	pkt_init(&p, INA_T_RESULT);
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
}

static void
test_wire_next_end(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	p.h.next = INA_BLOCK_END;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);

	pkt_init(&p, INA_T_RESULT);
	p.h.next = INA_BLOCK_END;
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
}

static void
test_wire_short_last_block(void **state)
{
	struct pkt p;

	(void)state;
	/* Block 6 of 7 holds 100 - 96 = 4 elements; it is in lane 0. */
	pkt_init(&p, INA_T_DATA);
	p.h.lane = 0;
	p.h.block = NB - 1;
	p.h.next = INA_BLOCK_END;
	pkt_set_elems(&p, TLEN - (NB - 1) * BSIZE);
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);

	/* A full block there is wrong. */
	pkt_set_elems(&p, BSIZE);
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BLOCK_SIZE);

	/* A tensor that is a whole number of blocks has no short block. */
	pkt_init(&p, INA_T_RESULT);
	p.h.tensor_len = 6 * BSIZE;
	p.h.lane = 2;
	p.h.block = 5;
	p.h.next = INA_BLOCK_END;
	pkt_set_elems(&p, BSIZE);
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);

	/* A one-element tensor. */
	pkt_init(&p, INA_T_DATA);
	p.h.tensor_len = 1;
	p.h.lane = 0;
	p.h.block = 0;
	p.h.next = INA_BLOCK_END;
	pkt_set_elems(&p, 1);
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
}

static void
test_wire_open(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	p.h.encoding = INA_ENC_I32;
	p.h.block = INA_BLOCK_OPEN;
	p.h.next = 4;
	p.h.exp = 5;
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect(&p, NULL, INA_WIRE_OK);

	/* Against an i32 job, with next END, and from the switch. */
	{
		struct ina_job_params j = job;

		j.encoding = INA_ENC_I32;
		expect(&p, &j, INA_WIRE_OK);
		p.h.next = INA_BLOCK_END;
		pkt_build(&p);
		expect(&p, &j, INA_WIRE_BAD_EXP); /* an exponent of no block */
		p.h.exp = 0;
		pkt_build(&p);
		expect(&p, &j, INA_WIRE_OK);
		p.h.type = INA_T_RESULT;
		p.h.rank = INA_RANK_SWITCH;
		pkt_build(&p);
		expect(&p, &j, INA_WIRE_OK);

		/* A lane that holds no block of a two-block tensor may open. */
		p.h.tensor_len = 2 * BSIZE;
		p.h.lane = 2;
		pkt_build(&p);
		expect(&p, &j, INA_WIRE_OK);
	}
}

static void
test_wire_reject_truncated(void **state)
{
	struct ina_hdr h;
	struct pkt p;
	size_t size;

	(void)state;
	pkt_init(&p, INA_T_FIN);
	for (size = 0; size < INA_HDR_SIZE; size++) {
		p.size = size;
		expect_stateless(&p, INA_WIRE_TRUNCATED);
	}
	assert_int_equal(ina_wire_validate(NULL, 0, NULL, &h), INA_WIRE_TRUNCATED);
}

static void
test_wire_reject_bad_version(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	p.h.version = 0;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_VERSION);
	p.h.version = 1; /* the old version */
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_VERSION);
}

static void
test_wire_reject_bad_type(void **state)
{
	static const uint8_t bad[] = { 0, INA_T_MAX + 1, 0x80, 0xff };
	struct pkt p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad); i++) {
		pkt_init(&p, INA_T_FIN);
		p.h.type = bad[i];
		pkt_build(&p);
		expect_stateless(&p, INA_WIRE_BAD_TYPE);
	}
}

static void
test_wire_reject_bad_flags(void **state)
{
	struct pkt p;
	unsigned int bit;

	(void)state;
	for (bit = 3; bit < 8; bit++) {
		pkt_init(&p, INA_T_DATA);
		p.h.flags = (uint8_t)(INA_F_VER | (1u << bit));
		pkt_build(&p);
		expect_stateless(&p, INA_WIRE_BAD_FLAGS);
	}
}

static void
test_wire_reject_bad_bound(void **state)
{
	static const uint32_t bad_f32[] = { 0xbf800000u, 0x80000001u, 0x7fc00000u, 0x7f800000u,
					    0xffffffffu };
	struct pkt p;

	(void)state;
	/* f32 and bf16: negative, NaN or infinite binary32 bits. */
	for (size_t i = 0; i < sizeof(bad_f32) / sizeof(bad_f32[0]); i++) {
		pkt_init(&p, INA_T_DATA);
		p.h.bound = bad_f32[i];
		pkt_build(&p);
		expect_stateless(&p, INA_WIRE_BAD_BOUND);
	}
	/* i32: a negative int32. */
	pkt_init(&p, INA_T_DATA);
	p.h.encoding = INA_ENC_I32;
	p.h.bound = 0x80000000u;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BOUND);
	/* Only DATA carries a bound. */
	pkt_init(&p, INA_T_LEAVE);
	p.h.bound = 1;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BOUND);
	pkt_init(&p, INA_T_RESULT);
	p.h.bound = 0x3f800000u;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BOUND);
	/* What is allowed: a finite positive bound, FLT_MAX, an i32 INT32_MAX. */
	pkt_init(&p, INA_T_DATA);
	p.h.bound = 0x3f800000u;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
	p.h.bound = 0x7f7fffffu;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
	pkt_init(&p, INA_T_DATA);
	p.h.encoding = INA_ENC_I32;
	p.h.bound = 0x7fffffffu;
	pkt_build(&p);
	expect(&p, NULL, INA_WIRE_OK);
}

/* DEFERRED belongs to a header-only RESULT. */
static void
test_wire_deferred_flag(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_RESULT);
	p.h.flags = INA_F_VER | INA_F_DEFERRED;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_FLAGS); /* with a payload */
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
	pkt_init(&p, INA_T_DATA);
	p.h.flags = INA_F_DEFERRED;
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_FLAGS);
}

static void
test_wire_reject_bad_encoding(void **state)
{
	static const uint8_t types[] = { INA_T_JOIN, INA_T_JOIN_ACK, INA_T_DATA, INA_T_RESULT };
	static const uint8_t bad[] = { 0, INA_ENC_MAX + 1, 0xff };
	struct pkt p;
	size_t i, k;

	(void)state;
	for (i = 0; i < sizeof(types); i++) {
		for (k = 0; k < sizeof(bad); k++) {
			pkt_init(&p, types[i]);
			p.h.encoding = bad[k];
			pkt_build(&p);
			expect_stateless(&p, INA_WIRE_BAD_ENCODING);
		}
	}
}

static void
test_wire_reject_bad_length(void **state)
{
	struct pkt p;

	(void)state;
	/* DATA: one byte too many or too few for n_elems. */
	pkt_init(&p, INA_T_DATA);
	p.size++;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	p.size -= 2;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	/* An empty ack with a payload. */
	pkt_init(&p, INA_T_RESULT);
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	p.size += 4;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	/* OPEN with a payload. */
	pkt_init(&p, INA_T_DATA);
	p.h.block = INA_BLOCK_OPEN;
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	p.size += 4;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	/* JOIN and JOIN_ACK: exactly 8 payload bytes. */
	pkt_init(&p, INA_T_JOIN);
	p.size = INA_HDR_SIZE;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	p.size = INA_HDR_SIZE + 9;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	pkt_init(&p, INA_T_JOIN_ACK);
	p.size = INA_HDR_SIZE + 7;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	/* WAIT: exactly the bitmap. */
	pkt_init(&p, INA_T_WAIT);
	p.size = INA_HDR_SIZE;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	p.size = INA_HDR_SIZE + INA_WAIT_PAYLOAD + 1;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	/* FIN, FIN_ACK, LEAVE: header only. */
	pkt_init(&p, INA_T_FIN);
	p.size = INA_HDR_SIZE + 1;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	pkt_init(&p, INA_T_FIN_ACK);
	p.size = INA_HDR_SIZE + 8;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	pkt_init(&p, INA_T_LEAVE);
	p.size = INA_HDR_SIZE + 4;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	/* ERROR: a message no longer than INA_ERROR_MSG_MAX. */
	pkt_init(&p, INA_T_ERROR);
	p.size = INA_HDR_SIZE + INA_ERROR_MSG_MAX + 1;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
}

static void
test_wire_reject_bad_block_size(void **state)
{
	struct pkt p;

	(void)state;
	/* B = 0 (which would also make the tensor zero blocks long). */
	pkt_init(&p, INA_T_DATA);
	p.h.block_size = 0;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BLOCK_SIZE);
	/* Elements neither 0 nor the block's (size matching n_elems). */
	pkt_init(&p, INA_T_DATA);
	pkt_set_elems(&p, BSIZE - 1);
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BLOCK_SIZE);
	pkt_set_elems(&p, BSIZE + 1);
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BLOCK_SIZE);
	pkt_set_elems(&p, 1000);
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BLOCK_SIZE);
	/* OPEN carries no elements. */
	pkt_init(&p, INA_T_RESULT);
	p.h.block = INA_BLOCK_OPEN;
	pkt_set_elems(&p, 1);
	pkt_build(&p);
	p.size = INA_HDR_SIZE;
	expect_stateless(&p, INA_WIRE_BAD_BLOCK_SIZE);
}

static void
test_wire_reject_block_past_tensor(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	p.h.lane = 1;
	p.h.block = NB + 1; /* lane 1 in a longer tensor */
	p.h.next = INA_BLOCK_END;
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BLOCK_PAST_TENSOR);
	p.h.block = NB;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BLOCK_PAST_TENSOR);
	p.h.block = INA_BLOCK_END;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BLOCK_PAST_TENSOR);
	/* An empty tensor has no block at all. */
	p.h.tensor_len = 0;
	p.h.block = 0;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BLOCK_PAST_TENSOR);
}

static void
test_wire_reject_next_not_past_block(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	p.h.block = 4;
	p.h.next = 4;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_NEXT_NOT_PAST_BLOCK);
	p.h.next = 1;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_NEXT_NOT_PAST_BLOCK);
}

static void
test_wire_reject_next_past_tensor(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	p.h.next = NB + 1; /* would be lane 1 */
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_NEXT_PAST_TENSOR);
	p.h.next = INA_BLOCK_OPEN;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_NEXT_PAST_TENSOR);
	/* From an OPEN packet. */
	pkt_init(&p, INA_T_RESULT);
	p.h.block = INA_BLOCK_OPEN;
	p.h.next = NB;
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_NEXT_PAST_TENSOR);
}

static void
test_wire_reject_bad_join(void **state)
{
	static const uint16_t bad[][3] = {
		{ 0, LANES, MAX_BLOCK },      { INA_MAX_WORLD + 1, LANES, MAX_BLOCK },
		{ 0xffff, LANES, MAX_BLOCK }, { WORLD, 0, MAX_BLOCK },
		{ WORLD, LANES, 0 },
	};
	struct pkt p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pkt_init(&p, INA_T_JOIN);
		p.h.rank = 0;
		pkt_build(&p);
		ina_wire_encode_join(bad[i][0], bad[i][1], bad[i][2], p.buf + INA_HDR_SIZE);
		expect_stateless(&p, INA_WIRE_BAD_JOIN);
		pkt_init(&p, INA_T_JOIN_ACK);
		ina_wire_encode_join(bad[i][0], bad[i][1], bad[i][2], p.buf + INA_HDR_SIZE);
		expect_stateless(&p, INA_WIRE_BAD_JOIN);
	}
	/* The payload's reserved field: the low byte is the weight, any
	 * value; the high byte the ssp bound. */
	pkt_init(&p, INA_T_JOIN);
	ina_wire_join_set_weight(p.buf + INA_HDR_SIZE, 255);
	assert_int_equal(p.buf[INA_HDR_SIZE + 7], 255);
	assert_int_equal(ina_wire_join_weight(p.buf + INA_HDR_SIZE), 255);
	assert_int_equal(ina_wire_join_ssp(p.buf + INA_HDR_SIZE), 0);
	expect(&p, &job, INA_WIRE_OK);
	pkt_init(&p, INA_T_JOIN_ACK);
	p.buf[INA_HDR_SIZE + 6] = 0x80;
	expect_stateless(&p, INA_WIRE_BAD_JOIN);
	/* The high byte is the ssp bound: 1..INA_SSP_MAX, never above. */
	pkt_init(&p, INA_T_JOIN);
	ina_wire_join_set_ssp(p.buf + INA_HDR_SIZE, INA_SSP_MAX);
	assert_int_equal(p.buf[INA_HDR_SIZE + 6], INA_SSP_MAX);
	assert_int_equal(ina_wire_join_ssp(p.buf + INA_HDR_SIZE), INA_SSP_MAX);
	expect(&p, &job, INA_WIRE_OK);
	ina_wire_join_set_ssp(p.buf + INA_HDR_SIZE, INA_SSP_MAX + 1);
	expect_stateless(&p, INA_WIRE_BAD_JOIN);
}

/* PARTIAL: a result with the 8-byte contributor bitmap after its payload,
 * never on DATA, never without the trailer. */
static void
test_wire_partial_flag(void **state)
{
	struct pkt p;

	(void)state;
	assert_int_equal(INA_F_PARTIAL, 0x20);
	pkt_init(&p, INA_T_RESULT);
	p.h.flags = INA_F_PARTIAL;
	pkt_set_elems(&p, 0);
	p.size += INA_PARTIAL_TRAILER;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
	p.size -= INA_PARTIAL_TRAILER;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	pkt_init(&p, INA_T_DATA);
	p.h.flags = INA_F_PARTIAL;
	pkt_set_elems(&p, 0);
	p.size += INA_PARTIAL_TRAILER;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_FLAGS);
}

static void
test_wire_reject_wrong_job(void **state)
{
	struct pkt p;
	uint8_t t;

	(void)state;
	for (t = 1; t <= INA_T_MAX; t++) {
		pkt_init(&p, t);
		p.h.job_id = JOB_ID + 1;
		pkt_build(&p);
		expect_stateful(&p, INA_WIRE_WRONG_JOB);
	}
}

static void
test_wire_reject_wrong_token(void **state)
{
	struct pkt p;
	uint8_t t;

	(void)state;
	for (t = 1; t <= INA_T_MAX; t++) {
		pkt_init(&p, t);
		p.h.token = TOKEN ^ (1ull << 63);
		pkt_build(&p);
		expect_stateful(&p, INA_WIRE_WRONG_TOKEN);
	}
}

static void
test_wire_reject_wrong_epoch(void **state)
{
	struct pkt p;
	uint8_t t;

	(void)state;
	for (t = INA_T_JOIN_ACK; t <= INA_T_MAX; t++) {
		pkt_init(&p, t);
		p.h.epoch = EPOCH + 1;
		pkt_build(&p);
		expect_stateful(&p, INA_WIRE_WRONG_EPOCH);
		p.h.epoch = 0;
		pkt_build(&p);
		expect_stateful(&p, INA_WIRE_WRONG_EPOCH);
	}
}

static void
test_wire_reject_rank_past_world(void **state)
{
	static const uint8_t worker[] = { INA_T_JOIN, INA_T_DATA, INA_T_FIN, INA_T_LEAVE,
					  INA_T_KEEPALIVE };
	static const uint8_t from_switch[] = {
		INA_T_JOIN_ACK, INA_T_RESULT, INA_T_WAIT, INA_T_FIN_ACK, INA_T_ERROR,
	};
	struct ina_job_params j = job;
	struct pkt p;
	size_t i;

	(void)state;
	/* A JOIN's rank against its own payload's world. */
	pkt_init(&p, INA_T_JOIN);
	p.h.rank = WORLD;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_RANK_PAST_WORLD);
	p.h.rank = INA_RANK_SWITCH;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_RANK_PAST_WORLD);

	/* Worker ranks against the job's world (a JOIN claiming a larger
	 * world than the job's passes alone). */
	j.world = 2;
	for (i = 0; i < sizeof(worker); i++) {
		pkt_init(&p, worker[i]);
		p.h.rank = 2;
		pkt_build(&p);
		expect(&p, NULL, INA_WIRE_OK);
		expect(&p, &j, INA_WIRE_RANK_PAST_WORLD);
		p.h.rank = INA_RANK_SWITCH;
		pkt_build(&p);
		if (worker[i] != INA_T_JOIN)
			expect(&p, NULL, INA_WIRE_OK);
		expect(&p, &j, INA_WIRE_RANK_PAST_WORLD);
	}
	/* Switch packets carry INA_RANK_SWITCH and nothing else. */
	for (i = 0; i < sizeof(from_switch); i++) {
		pkt_init(&p, from_switch[i]);
		p.h.rank = 0;
		pkt_build(&p);
		expect_stateful(&p, INA_WIRE_RANK_PAST_WORLD);
		p.h.rank = INA_RANK_SWITCH - 1;
		pkt_build(&p);
		expect_stateful(&p, INA_WIRE_RANK_PAST_WORLD);
	}
}

static void
test_wire_reject_lane_past_lanes(void **state)
{
	struct pkt p;

	(void)state;
	/* Lane 3 of 3, with block 3 and next 6 (3 % 3 == 0, not 3). */
	pkt_init(&p, INA_T_DATA);
	p.h.lane = LANES;
	p.h.block = 3;
	p.h.next = 6;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_LANE_PAST_LANES);
	/* An OPEN packet too. */
	pkt_init(&p, INA_T_RESULT);
	p.h.lane = 0xffff;
	p.h.block = INA_BLOCK_OPEN;
	p.h.next = INA_BLOCK_END;
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_LANE_PAST_LANES);
}

static void
test_wire_reject_block_not_in_lane(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	p.h.block = 2; /* lane 2, not 1 */
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_BLOCK_NOT_IN_LANE);
	pkt_init(&p, INA_T_RESULT);
	p.h.block = 3; /* lane 0 */
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_BLOCK_NOT_IN_LANE);
}

static void
test_wire_reject_next_not_in_lane(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	p.h.next = 5; /* lane 2, not 1 */
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_NEXT_NOT_IN_LANE);
	/* From an OPEN packet. */
	pkt_init(&p, INA_T_RESULT);
	p.h.block = INA_BLOCK_OPEN;
	p.h.next = 0; /* lane 0, not 1 */
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_NEXT_NOT_IN_LANE);
}

static void
test_wire_reject_wrong_encoding(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	p.h.encoding = INA_ENC_I32;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_WRONG_ENCODING);
	pkt_init(&p, INA_T_RESULT);
	p.h.encoding = INA_ENC_I32;
	p.h.block = INA_BLOCK_OPEN;
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_WRONG_ENCODING);
}

static void
test_wire_reject_block_too_big(void **state)
{
	struct pkt p;

	(void)state;
	/* B = 65 > 64: block 0 holds 65 elements, block 1 holds 35. */
	pkt_init(&p, INA_T_DATA);
	p.h.block_size = MAX_BLOCK + 1;
	p.h.block = 1;
	p.h.next = INA_BLOCK_END;
	pkt_set_elems(&p, TLEN - (MAX_BLOCK + 1));
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_BLOCK_TOO_BIG);
	/* A largest B, one block. */
	pkt_init(&p, INA_T_RESULT);
	p.h.block_size = INA_BLOCK_MAX;
	p.h.lane = 0;
	p.h.block = 0;
	p.h.next = INA_BLOCK_END;
	pkt_set_elems(&p, TLEN);
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_BLOCK_TOO_BIG);
}

/* The i32 exponent (PROTOCOL 2.1, 7.1): INA_EXP_MIN..INA_EXP_MAX when 'next'
 * names a block, else 0; f32 and bf16 always 0. Refused, never clamped, on
 * every path: alone, against a job, and the fused DATA check. */
static void
test_wire_reject_bad_exp(void **state)
{
	static const uint8_t types[] = { INA_T_DATA, INA_T_RESULT, INA_T_REPL };
	struct ina_job_params j = job;
	struct pkt p;

	(void)state;
	j.encoding = INA_ENC_I32;
	for (size_t t = 0; t < sizeof(types); t++) {
		pkt_init(&p, types[t]);
		p.h.encoding = INA_ENC_I32;
		if (types[t] == INA_T_REPL)
			p.h.rank = INA_RANK_ALL;
		for (int e = INA_EXP_MIN - 2; e <= INA_EXP_MAX + 2; e++) {
			p.h.exp = (int16_t)e;
			pkt_build(&p);
			expect(&p, &j,
			       e >= INA_EXP_MIN && e <= INA_EXP_MAX ? INA_WIRE_OK
								    : INA_WIRE_BAD_EXP);
			expect(&p, NULL,
			       e >= INA_EXP_MIN && e <= INA_EXP_MAX ? INA_WIRE_OK
								    : INA_WIRE_BAD_EXP);
		}
		/* The marks of encode.h are never sent. */
		p.h.exp = INA_EXP_ZERO;
		pkt_build(&p);
		expect(&p, &j, INA_WIRE_BAD_EXP);
		p.h.exp = INA_EXP_NONFINITE;
		pkt_build(&p);
		expect(&p, &j, INA_WIRE_BAD_EXP);
		/* 'next' END: the exponent names nothing and must be 0. */
		p.h.next = INA_BLOCK_END;
		p.h.exp = 1;
		pkt_build(&p);
		expect(&p, &j, INA_WIRE_BAD_EXP);
		p.h.exp = 0;
		pkt_build(&p);
		expect(&p, &j, INA_WIRE_OK);
		/* f32 carries no exponent. */
		pkt_init(&p, types[t]);
		if (types[t] == INA_T_REPL)
			p.h.rank = INA_RANK_ALL;
		p.h.exp = 5;
		pkt_build(&p);
		expect(&p, &job, INA_WIRE_BAD_EXP);
		expect(&p, NULL, INA_WIRE_BAD_EXP);
	}
	assert_string_equal(ina_wire_reason_name(INA_WIRE_BAD_EXP), "bad_exp");
}

/* Sub-blocks (PROTOCOL 2.7): the cut rides in block_size's top 3 bits, the
 * payload is the presence mask and the present sub-blocks; every way the
 * mask can lie is bad_mask, every wrong length bad_length. */
static void
test_wire_sub_blocks(void **state)
{
	struct ina_hdr h;
	struct pkt p;

	(void)state;
	/* Block 1 (16 elements) in 4 sub-blocks of 4; sub-blocks 0 and 2. */
	pkt_init(&p, INA_T_DATA);
	p.h.sub_log = 2;
	pkt_build(&p);
	assert_int_equal(p.buf[36], 0x40);
	assert_int_equal(p.buf[37], 0x10);
	memset(p.buf + INA_HDR_SIZE, 0, 4);
	p.buf[INA_HDR_SIZE] = 0x05;
	p.size = INA_HDR_SIZE + 4 + 8 * 4;
	expect(&p, NULL, INA_WIRE_OK);
	expect(&p, &job, INA_WIRE_OK);
	assert_int_equal(ina_wire_validate(p.buf, p.size, &job, &h), INA_WIRE_OK);
	assert_int_equal(h.block_size, BSIZE);
	assert_int_equal(h.sub_log, 2);
	assert_int_equal(h.n_elems, BSIZE);
	p.size += 4;
	expect(&p, &job, INA_WIRE_BAD_LENGTH);
	p.size -= 8;
	expect(&p, &job, INA_WIRE_BAD_LENGTH);
	p.size = INA_HDR_SIZE + 2; /* not even the mask */
	expect(&p, &job, INA_WIRE_BAD_LENGTH);
	/* Every sub-block: the whole block, plus the mask. */
	p.buf[INA_HDR_SIZE] = 0x0f;
	p.size = INA_HDR_SIZE + 4 + BSIZE * 4;
	expect(&p, &job, INA_WIRE_OK);
	/* An empty mask, a bit past the 4 sub-blocks, a padding byte. */
	p.buf[INA_HDR_SIZE] = 0;
	p.size = INA_HDR_SIZE + 4;
	expect(&p, &job, INA_WIRE_BAD_MASK);
	expect(&p, NULL, INA_WIRE_BAD_MASK);
	p.buf[INA_HDR_SIZE] = 0x11;
	p.size = INA_HDR_SIZE + 4 + 8 * 4;
	expect(&p, &job, INA_WIRE_BAD_MASK);
	p.buf[INA_HDR_SIZE] = 0x03;
	p.buf[INA_HDR_SIZE + 3] = 0x80;
	expect(&p, &job, INA_WIRE_BAD_MASK);
	p.buf[INA_HDR_SIZE + 3] = 0;
	expect(&p, &job, INA_WIRE_OK);
	/* B not cut evenly: 16 in 32 sub-blocks, 12 in 8. */
	p.h.sub_log = 5;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_BAD_MASK);
	expect(&p, NULL, INA_WIRE_BAD_MASK);
	/* A header-only packet needs no mask, a cut or not. */
	p.h.sub_log = 3;
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
	/* The short last block: B 64 in 4 sub-blocks of 16, block 1 holds 36
	 * elements, so 3 sub-blocks, the last of 4; sub-blocks 0 and 2 are
	 * 16 + 4 elements. */
	pkt_init(&p, INA_T_RESULT);
	p.h.block_size = 64;
	p.h.sub_log = 2;
	p.h.next = INA_BLOCK_END;
	p.h.n_elems = 36;
	pkt_build(&p);
	memset(p.buf + INA_HDR_SIZE, 0, 4);
	p.buf[INA_HDR_SIZE] = 0x05;
	p.size = INA_HDR_SIZE + 4 + 20 * 4;
	expect(&p, &job, INA_WIRE_OK);
	p.buf[INA_HDR_SIZE] = 0x09; /* sub-block 3 is past the block */
	expect(&p, &job, INA_WIRE_BAD_MASK);
	/* 128 sub-blocks: a 16-byte mask; B = 128, one element each. */
	pkt_init(&p, INA_T_RESULT);
	p.h.block_size = 128;
	p.h.sub_log = 7;
	p.h.tensor_len = 1000;
	p.h.block = 7;
	p.h.lane = 1;
	p.h.next = INA_BLOCK_END;
	p.h.n_elems = 128 * 8 > 1000 ? 1000 - 7 * 128 : 128;
	pkt_build(&p);
	memset(p.buf + INA_HDR_SIZE, 0, 16);
	p.buf[INA_HDR_SIZE + 12] = 0x80; /* sub-block 103, the last of 104 */
	p.size = INA_HDR_SIZE + 16 + 4;
	expect(&p, NULL, INA_WIRE_OK);
	p.buf[INA_HDR_SIZE + 13] = 0x01; /* sub-block 104: past the block */
	expect(&p, NULL, INA_WIRE_BAD_MASK);
	/* A JOIN's largest block is 13 bits. */
	pkt_init(&p, INA_T_JOIN);
	ina_wire_encode_join(WORLD, LANES, INA_BLOCK_MAX, p.buf + INA_HDR_SIZE);
	expect(&p, NULL, INA_WIRE_OK);
	ina_wire_encode_join(WORLD, LANES, INA_BLOCK_MAX + 1, p.buf + INA_HDR_SIZE);
	expect(&p, NULL, INA_WIRE_BAD_JOIN);
}

/* The replica's types have their fixed values and the flag its bit. */
static void
test_wire_replica_values(void **state)
{
	static const uint8_t want[16] = {
		0x02, 0x0a, 0x01, 0x01, /* version, REPL, f32, VER */
		0x00, 0x00, 0xc0, 0xde, /* job_id */
		0x00, 0x00, 0x00, 0x03, /* epoch */
		0xff, 0xfe, 0x00, 0x01, /* rank ALL, lane 1 */
	};
	struct pkt p;

	(void)state;
	assert_int_equal(INA_T_REPL, 10);
	assert_int_equal(INA_T_FAILOVER, 11);
	assert_int_equal(INA_T_KEEPALIVE, 12);
	assert_int_equal(INA_T_MAX, 12);
	assert_int_equal(INA_F_STANDBY, 0x10);
	assert_int_equal(INA_F_GRANT, 0x40);
	assert_int_equal(INA_F_REDIRECT, 0x80);
	assert_int_equal(INA_F_KNOWN, 0xff);
	assert_int_equal(INA_RANK_ALL, 0xfffe);
	pkt_init(&p, INA_T_REPL);
	assert_memory_equal(p.buf, want, sizeof(want));
	pkt_init(&p, INA_T_FAILOVER);
	assert_int_equal(p.buf[1], 0x0b);
}

/* REPL: a RESULT in every respect but type and rank. */
static void
test_wire_repl(void **state)
{
	struct ina_job_params j = job;
	struct pkt p;
	uint16_t r;

	(void)state;
	/* To every rank, or to one rank of the job, and nothing else. */
	pkt_init(&p, INA_T_REPL);
	expect(&p, &job, INA_WIRE_OK);
	for (r = 0; r < WORLD; r++) {
		p.h.rank = r;
		pkt_build(&p);
		expect(&p, &job, INA_WIRE_OK);
	}
	p.h.rank = WORLD;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_RANK_PAST_WORLD);
	p.h.rank = INA_RANK_SWITCH;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_RANK_PAST_WORLD);
	/* Payload rules of a RESULT. */
	pkt_init(&p, INA_T_REPL);
	p.size += 4;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	pkt_init(&p, INA_T_REPL);
	pkt_set_elems(&p, BSIZE - 1);
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BLOCK_SIZE);
	pkt_init(&p, INA_T_REPL);
	p.h.next = 1;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_NEXT_NOT_PAST_BLOCK);
	pkt_init(&p, INA_T_REPL);
	p.h.block = 2;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_BLOCK_NOT_IN_LANE);
	pkt_init(&p, INA_T_REPL);
	p.h.bound = 0x3f800000u;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BOUND);
	/* A DEFERRED or SATURATED result, header-only, an i32 opener's. */
	pkt_init(&p, INA_T_REPL);
	p.h.flags = INA_F_DEFERRED;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_FLAGS);
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
	j.encoding = INA_ENC_I32;
	pkt_init(&p, INA_T_REPL);
	p.h.encoding = INA_ENC_I32;
	p.h.flags = INA_F_SATURATED;
	p.h.exp = 7;
	pkt_build(&p);
	expect(&p, &j, INA_WIRE_OK);
	p.h.block = INA_BLOCK_OPEN;
	p.h.rank = 2;
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect(&p, &j, INA_WIRE_OK);
	/* The job's encoding and epoch. */
	expect(&p, &job, INA_WIRE_WRONG_ENCODING);
	p.h.epoch = EPOCH + 1;
	pkt_build(&p);
	expect(&p, &j, INA_WIRE_WRONG_EPOCH);
}

/* FAILOVER: header-only; a worker's carries the job's epoch, the replica's
 * announcement a new one that the receiver adopts. */
static void
test_wire_failover(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_FAILOVER);
	expect(&p, &job, INA_WIRE_OK);
	p.size = INA_HDR_SIZE + 1;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	/* The worker's: its rank, the job's epoch. */
	pkt_init(&p, INA_T_FAILOVER);
	p.h.rank = WORLD;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_RANK_PAST_WORLD);
	p.h.rank = INA_RANK_ALL;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_RANK_PAST_WORLD);
	pkt_init(&p, INA_T_FAILOVER);
	p.h.epoch = EPOCH - 1;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_WRONG_EPOCH);
	/* The announcement: from the switch, any epoch; job and token still
	 * checked. */
	p.h.rank = INA_RANK_SWITCH;
	p.h.epoch = EPOCH + 1;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
	p.h.token = TOKEN + 1;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_WRONG_TOKEN);
	p.h.token = TOKEN;
	p.h.job_id = JOB_ID + 1;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_WRONG_JOB);
}

/* KEEPALIVE: the bare header from a rank of the job, with its epoch; no
 * flag (not even VER or RETX), no payload. */
static void
test_wire_keepalive(void **state)
{
	static const uint8_t want[16] = {
		0x02, 0x0c, 0x00, 0x00, /* version, KEEPALIVE, encoding (unchecked), no flag */
		0x00, 0x00, 0xc0, 0xde, /* job_id */
		0x00, 0x00, 0x00, 0x03, /* epoch */
		0x00, 0x03, 0x00, 0x00, /* rank 3, lane 0 */
	};
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_KEEPALIVE);
	assert_memory_equal(p.buf, want, sizeof(want));
	expect(&p, NULL, INA_WIRE_OK);
	expect(&p, &job, INA_WIRE_OK);
	p.size = INA_HDR_SIZE + 8;
	expect_stateless(&p, INA_WIRE_BAD_LENGTH);
	for (unsigned bit = 0; bit < 8; bit++) {
		pkt_init(&p, INA_T_KEEPALIVE);
		p.h.flags = (uint8_t)(1u << bit);
		pkt_build(&p);
		expect_stateless(&p, INA_WIRE_BAD_FLAGS);
	}
	pkt_init(&p, INA_T_KEEPALIVE);
	p.h.bound = 1;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BOUND);
	pkt_init(&p, INA_T_KEEPALIVE);
	p.h.rank = WORLD;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_RANK_PAST_WORLD);
	p.h.rank = INA_RANK_SWITCH;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_RANK_PAST_WORLD);
	pkt_init(&p, INA_T_KEEPALIVE);
	p.h.epoch = EPOCH + 1;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_WRONG_EPOCH);
	pkt_init(&p, INA_T_KEEPALIVE);
	p.h.token = TOKEN + 1;
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_WRONG_TOKEN);
}

/* STANDBY belongs to JOIN and JOIN_ACK only. */
static void
test_wire_standby_flag(void **state)
{
	struct pkt p;
	uint8_t t;

	(void)state;
	for (t = 1; t <= INA_T_MAX; t++) {
		pkt_init(&p, t);
		p.h.flags |= INA_F_STANDBY;
		pkt_build(&p);
		if (t == INA_T_JOIN || t == INA_T_JOIN_ACK)
			expect(&p, &job, INA_WIRE_OK);
		else
			expect_stateless(&p, INA_WIRE_BAD_FLAGS);
	}
	/* A standby JOIN carries the primary's epoch, which the wire does not
	 * check (the replica does). */
	pkt_init(&p, INA_T_JOIN);
	p.h.flags = INA_F_STANDBY;
	p.h.epoch = EPOCH + 5;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
}

/* GRANT: only on a JOIN_ACK (the switch admits the job with fewer lanes). */
static void
test_wire_grant_flag(void **state)
{
	struct pkt p;
	uint8_t t;

	(void)state;
	for (t = 1; t <= INA_T_MAX; t++) {
		pkt_init(&p, t);
		p.h.flags |= INA_F_GRANT;
		pkt_build(&p);
		if (t == INA_T_JOIN_ACK)
			expect(&p, &job, INA_WIRE_OK);
		else
			expect_stateless(&p, INA_WIRE_BAD_FLAGS);
	}
}

/* RESHAPE (the GRANT bit on a RESULT): 'status' lanes (1 .. the job's - 1)
 * from round 'bound'; the only RESULT with a bound. */
static void
test_wire_reshape_flag(void **state)
{
	struct pkt p;

	(void)state;
	assert_int_equal(INA_F_RESHAPE, INA_F_GRANT);
	pkt_init(&p, INA_T_RESULT);
	p.h.flags = INA_F_RESHAPE;
	p.h.status = LANES - 1;
	p.h.bound = 12;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_OK);
	p.h.status = LANES; /* not fewer lanes */
	pkt_build(&p);
	expect_stateful(&p, INA_WIRE_LANE_PAST_LANES);
	p.h.status = 0;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_FLAGS);
	/* Without RESHAPE a RESULT carries no bound. */
	p.h.flags = 0;
	p.h.status = 0;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BOUND);
	/* Not on a REPL. */
	pkt_init(&p, INA_T_REPL);
	p.h.flags = INA_F_RESHAPE;
	p.h.status = 1;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_FLAGS);
}

/* REDIRECT: a JOIN_ACK whose payload names a host aggregator after the JOIN
 * payload (16 bytes); never on another type, nor with GRANT or STANDBY;
 * the address and port non-zero, the reserved field 0. */
static void
test_wire_redirect_flag(void **state)
{
	static const uint8_t want[8] = { 127, 0, 0, 1, 0x24, 0x55, 0, 0 };
	struct pkt p;
	uint32_t ip;
	uint16_t port;
	uint8_t t;

	(void)state;
	pkt_init(&p, INA_T_JOIN_ACK);
	p.h.flags = INA_F_REDIRECT;
	p.h.epoch = 0;
	pkt_build(&p);
	ina_wire_encode_redirect(0x7f000001u, 9301, p.buf + INA_HDR_SIZE + 8);
	assert_memory_equal(p.buf + INA_HDR_SIZE + 8, want, sizeof(want));
	ina_wire_decode_redirect(p.buf + INA_HDR_SIZE + 8, &ip, &port);
	assert_int_equal(ip, 0x7f000001u);
	assert_int_equal(port, 9301);
	expect_stateless(&p, INA_WIRE_BAD_LENGTH); /* 8 bytes of payload */
	p.size += sizeof(struct ina_wire_redirect);
	expect(&p, NULL, INA_WIRE_OK); /* epoch 0: checked before any job */
	p.buf[INA_HDR_SIZE + 15] = 1;  /* reserved */
	expect_stateless(&p, INA_WIRE_BAD_JOIN);
	ina_wire_encode_redirect(0, 9301, p.buf + INA_HDR_SIZE + 8);
	expect_stateless(&p, INA_WIRE_BAD_JOIN);
	ina_wire_encode_redirect(0x7f000001u, 0, p.buf + INA_HDR_SIZE + 8);
	expect_stateless(&p, INA_WIRE_BAD_JOIN);
	ina_wire_encode_redirect(0x7f000001u, 9301, p.buf + INA_HDR_SIZE + 8);
	p.h.flags = INA_F_REDIRECT | INA_F_GRANT;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_FLAGS);
	p.h.flags = INA_F_REDIRECT | INA_F_STANDBY;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_FLAGS);
	for (t = 1; t <= INA_T_MAX; t++) {
		if (t == INA_T_JOIN_ACK)
			continue;
		pkt_init(&p, t);
		p.h.flags |= INA_F_REDIRECT;
		pkt_build(&p);
		expect_stateless(&p, INA_WIRE_BAD_FLAGS);
	}
	/* Not even on a RESULT that RESHAPE makes valid otherwise (fuzz_wire
	 * found the validator letting this through). */
	pkt_init(&p, INA_T_RESULT);
	p.h.flags |= INA_F_RESHAPE;
	p.h.status = 1;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_OK);
	p.h.flags |= INA_F_REDIRECT;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_FLAGS);
}

/* Each check reports the first defect in the documented order. */
static void
test_wire_reject_order(void **state)
{
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	p.h.version = 3;
	p.h.type = 0;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_VERSION);
	p.h.version = INA_WIRE_VERSION;
	p.h.type = INA_T_DATA;
	p.h.flags = 0xff;
	p.h.bound = 0xffffffffu;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_FLAGS);
	/* A stateless defect comes before any stateful one. */
	pkt_init(&p, INA_T_DATA);
	p.h.job_id = 0;
	p.h.bound = 0xffffffffu;
	pkt_build(&p);
	expect_stateless(&p, INA_WIRE_BAD_BOUND);
	/* Job before token before epoch before rank before lane. */
	pkt_init(&p, INA_T_DATA);
	p.h.job_id = 0;
	p.h.token = 0;
	p.h.epoch = 0;
	p.h.rank = WORLD;
	p.h.lane = LANES;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_WRONG_JOB);
	p.h.job_id = JOB_ID;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_WRONG_TOKEN);
	p.h.token = TOKEN;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_WRONG_EPOCH);
	p.h.epoch = EPOCH;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_RANK_PAST_WORLD);
	p.h.rank = 0;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_LANE_PAST_LANES);
	/* Lane membership before encoding before block size. */
	pkt_init(&p, INA_T_DATA);
	p.h.tensor_len = 1000;
	p.h.block = 2;
	p.h.next = 5;
	p.h.encoding = INA_ENC_I32;
	p.h.block_size = MAX_BLOCK + 1;
	pkt_set_elems(&p, 0);
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_BLOCK_NOT_IN_LANE);
	p.h.block = 1;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_NEXT_NOT_IN_LANE);
	p.h.next = INA_BLOCK_END;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_WRONG_ENCODING);
	p.h.encoding = INA_ENC_F32;
	pkt_build(&p);
	expect(&p, &job, INA_WIRE_BLOCK_TOO_BIG);
}

/* A job with no lanes or no world refuses instead of dividing by zero. */
static void
test_wire_degenerate_job(void **state)
{
	struct ina_job_params j = job;
	struct pkt p;

	(void)state;
	pkt_init(&p, INA_T_DATA);
	j.lanes = 0;
	expect(&p, &j, INA_WIRE_LANE_PAST_LANES);
	j = job;
	j.world = 0;
	expect(&p, &j, INA_WIRE_RANK_PAST_WORLD);
}

static void
test_wire_reason_names(void **state)
{
	const char *names[INA_WIRE_REASON_MAX];
	int r, k;

	(void)state;
	for (r = 0; r < INA_WIRE_REASON_MAX; r++) {
		names[r] = ina_wire_reason_name((enum ina_wire_reason)r);
		assert_non_null(names[r]);
		assert_true(strlen(names[r]) > 0);
		assert_string_not_equal(names[r], "unknown");
		for (k = 0; k < r; k++)
			assert_string_not_equal(names[r], names[k]);
	}
	assert_string_equal(ina_wire_reason_name(INA_WIRE_OK), "ok");
	assert_string_equal(ina_wire_reason_name(INA_WIRE_TRUNCATED), "truncated");
	assert_string_equal(ina_wire_reason_name(INA_WIRE_BAD_VERSION), "bad_version");
	assert_string_equal(ina_wire_reason_name(INA_WIRE_BLOCK_NOT_IN_LANE), "block_not_in_lane");
	assert_string_equal(ina_wire_reason_name(INA_WIRE_BLOCK_TOO_BIG), "block_too_big");
	assert_non_null(ina_wire_reason_name(INA_WIRE_REASON_MAX));
	assert_non_null(ina_wire_reason_name((enum ina_wire_reason)1000));
	assert_non_null(ina_wire_reason_name((enum ina_wire_reason) - 1));
}

static void
test_wire_type_names(void **state)
{
	static const char *const want[] = {
		"unknown", "join",  "join_ack", "data", "result",   "wait",	 "fin",
		"fin_ack", "leave", "error",	"repl", "failover", "keepalive",
	};
	unsigned int t;

	(void)state;
	for (t = 0; t < sizeof(want) / sizeof(want[0]); t++)
		assert_string_equal(ina_wire_type_name((uint8_t)t), want[t]);
	for (t = INA_T_MAX + 1; t < 256; t++)
		assert_string_equal(ina_wire_type_name((uint8_t)t), "unknown");
}

static void
test_wire_encoding_names(void **state)
{
	unsigned int e;

	(void)state;
	assert_string_equal(ina_wire_encoding_name(INA_ENC_F32), "f32");
	assert_string_equal(ina_wire_encoding_name(INA_ENC_I32), "i32");
	assert_null(ina_wire_encoding_name(0));
	for (e = INA_ENC_MAX + 1; e < 256; e++)
		assert_null(ina_wire_encoding_name((uint8_t)e));
	assert_int_equal(ina_wire_encoding_parse("f32"), INA_ENC_F32);
	assert_int_equal(ina_wire_encoding_parse("i32"), INA_ENC_I32);
	assert_string_equal(ina_wire_encoding_name(INA_ENC_BF16), "bf16");
	assert_int_equal(ina_wire_encoding_parse("bf16"), INA_ENC_BF16);
	assert_int_equal(ina_wire_encoding_parse("bf1"), 0);
	assert_int_equal(ina_wire_encoding_parse("f3"), 0);
	assert_int_equal(ina_wire_encoding_parse("f322"), 0);
	assert_int_equal(ina_wire_encoding_parse(""), 0);
	assert_int_equal(ina_wire_encoding_parse(NULL), 0);
}

/* xorshift64*: a fixed sequence whatever the libc. */
static uint64_t
rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

/* Random bytes and mutated valid packets, each in a buffer of exactly its
 * size so that the sanitizer build catches any read past it. */
static void
test_wire_random_bytes(void **state)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	unsigned int counts[INA_WIRE_REASON_MAX] = { 0 };
	unsigned int it, n_ok = 0;
	struct ina_job_params j;
	struct ina_hdr h;
	struct pkt p;
	uint8_t empty;

	(void)state;
	for (it = 0; it < 100000; it++) {
		uint64_t x = rng_next(&seed);
		enum ina_wire_reason r;
		uint8_t *buf;
		size_t size, i;

		if (x & 1) {
			size = rng_next(&seed) % 601;
			buf = size ? malloc(size) : &empty;
			assert_non_null(buf);
			for (i = 0; i < size; i++)
				buf[i] = (uint8_t)rng_next(&seed);
			if (size >= 2 && (x & 2)) {
				buf[0] = INA_WIRE_VERSION;
				buf[1] = (uint8_t)(1 + (x >> 8) % INA_T_MAX);
			}
		} else {
			pkt_init(&p, (uint8_t)(1 + (x >> 8) % INA_T_MAX));
			size = p.size;
			if (x & 2)
				size = (size_t)((x >> 16) % 601);
			buf = size ? malloc(size) : &empty;
			assert_non_null(buf);
			memcpy(buf, p.buf, size);
			if (size)
				buf[(x >> 32) % size] ^= (uint8_t)(1u << ((x >> 40) % 8));
		}

		/* Without a job, with the test job, and with one copied from
		 * the packet itself so the stateful checks are reached. */
		j = job;
		if (size >= INA_HDR_SIZE && (x & 4)) {
			ina_wire_decode_hdr(buf, &h);
			j.job_id = h.job_id;
			j.token = h.token;
			j.epoch = h.epoch;
			j.encoding = h.encoding;
			j.world = (uint16_t)(rng_next(&seed) % (INA_MAX_WORLD + 2));
			j.lanes = (uint16_t)(rng_next(&seed) % 9);
			j.max_block = (uint16_t)rng_next(&seed);
		}
		r = ina_wire_validate(buf, size, NULL, &h);
		assert_true((unsigned int)r < INA_WIRE_REASON_MAX);
		r = ina_wire_validate(buf, size, &j, &h);
		assert_true((unsigned int)r < INA_WIRE_REASON_MAX);
		assert_non_null(ina_wire_reason_name(r));
		counts[r]++;
		if (r == INA_WIRE_OK)
			n_ok++;
		if (buf != &empty)
			free(buf);
	}
	/* The loop reached both ends of the checks. */
	assert_true(n_ok > 0);
	assert_true(counts[INA_WIRE_TRUNCATED] > 0);
	assert_true(counts[INA_WIRE_BAD_LENGTH] > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire_encode_golden),
		cmocka_unit_test(test_wire_decode_golden),
		cmocka_unit_test(test_wire_round_trip),
		cmocka_unit_test(test_wire_join_codec),
		cmocka_unit_test(test_wire_elem_size),
		cmocka_unit_test(test_wire_valid_every_type),
		cmocka_unit_test(test_wire_valid_fills_hdr),
		cmocka_unit_test(test_wire_valid_variants),
		cmocka_unit_test(test_wire_empty_ack),
		cmocka_unit_test(test_wire_next_end),
		cmocka_unit_test(test_wire_short_last_block),
		cmocka_unit_test(test_wire_open),
		cmocka_unit_test(test_wire_reject_truncated),
		cmocka_unit_test(test_wire_reject_bad_version),
		cmocka_unit_test(test_wire_reject_bad_type),
		cmocka_unit_test(test_wire_reject_bad_flags),
		cmocka_unit_test(test_wire_partial_flag),
		cmocka_unit_test(test_wire_reject_bad_bound),
		cmocka_unit_test(test_wire_deferred_flag),
		cmocka_unit_test(test_wire_reject_bad_encoding),
		cmocka_unit_test(test_wire_reject_bad_length),
		cmocka_unit_test(test_wire_reject_bad_block_size),
		cmocka_unit_test(test_wire_reject_block_past_tensor),
		cmocka_unit_test(test_wire_reject_next_not_past_block),
		cmocka_unit_test(test_wire_reject_next_past_tensor),
		cmocka_unit_test(test_wire_reject_bad_join),
		cmocka_unit_test(test_wire_reject_wrong_job),
		cmocka_unit_test(test_wire_reject_wrong_token),
		cmocka_unit_test(test_wire_reject_wrong_epoch),
		cmocka_unit_test(test_wire_reject_rank_past_world),
		cmocka_unit_test(test_wire_reject_lane_past_lanes),
		cmocka_unit_test(test_wire_reject_block_not_in_lane),
		cmocka_unit_test(test_wire_reject_next_not_in_lane),
		cmocka_unit_test(test_wire_reject_wrong_encoding),
		cmocka_unit_test(test_wire_reject_block_too_big),
		cmocka_unit_test(test_wire_reject_bad_exp),
		cmocka_unit_test(test_wire_sub_blocks),
		cmocka_unit_test(test_wire_replica_values),
		cmocka_unit_test(test_wire_repl),
		cmocka_unit_test(test_wire_keepalive),
		cmocka_unit_test(test_wire_failover),
		cmocka_unit_test(test_wire_standby_flag),
		cmocka_unit_test(test_wire_grant_flag),
		cmocka_unit_test(test_wire_redirect_flag),
		cmocka_unit_test(test_wire_reshape_flag),
		cmocka_unit_test(test_wire_reject_order),
		cmocka_unit_test(test_wire_degenerate_job),
		cmocka_unit_test(test_wire_reason_names),
		cmocka_unit_test(test_wire_type_names),
		cmocka_unit_test(test_wire_encoding_names),
		cmocka_unit_test(test_wire_random_bytes),
	};

	return cmocka_run_group_tests_name("wire", tests, NULL, NULL);
}
