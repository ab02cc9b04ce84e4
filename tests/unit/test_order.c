/* SPDX-License-Identifier: MIT */
/*
 * The transfer scheduler (host/src/order.h) alone: each policy's order
 * (fifo: submission order whatever the priorities; priority: the smallest
 * value first inside the window, ties in submission order; magnitude: the
 * largest previous norm first, unknown first), the window's rule (nothing
 * chosen before the window's end is submitted or flushed), fences
 * (barriers), no starvation, the capacity; and agreement: two schedulers fed
 * the same submission sequence but asked for their next operation at
 * different moments (as workers whose tensors become ready at different
 * times) choose the same sequence, for random programs under every policy.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "order.h"

static struct order *
mk(enum order_policy p, uint32_t window, uint32_t cap)
{
	struct order_config c = { .policy = p,
				  .window = window,
				  .capacity = cap,
				  .max_tensors = 64 };
	struct order *s = order_create(&c);

	assert_non_null(s);
	return s;
}

static uint64_t
sub(struct order *s, uint32_t tensor, int32_t prio, int fence)
{
	uint64_t seq;

	assert_int_equal(order_submit(s, tensor, prio, fence, &seq), 0);
	return seq;
}

static uint64_t
next(struct order *s)
{
	uint64_t seq = UINT64_MAX;

	assert_int_equal(order_next(s, &seq), 0);
	return seq;
}

static void
test_fifo_ignores_priority(void **state)
{
	struct order *s = mk(ORDER_FIFO, 0, 16);
	uint64_t seq;

	(void)state;
	assert_int_equal(order_next(s, &seq), ORDER_EMPTY);
	for (int i = 0; i < 8; i++)
		sub(s, (uint32_t)i, 7 - i, 0);
	/* Runs at once, without a flush, in submission order. */
	for (uint64_t i = 0; i < 8; i++)
		assert_int_equal(next(s), i);
	assert_int_equal(order_next(s, &seq), ORDER_EMPTY);
	order_destroy(s);
}

static void
test_priority_window(void **state)
{
	struct order *s = mk(ORDER_PRIORITY, 4, 16);
	uint64_t seq;

	(void)state;
	/* Backprop order: layer 7 first, priority = layer. */
	sub(s, 7, 7, 0);
	sub(s, 6, 6, 0);
	sub(s, 5, 5, 0);
	assert_int_equal(order_next(s, &seq), ORDER_WAIT);
	assert_true(order_waiting(s));
	sub(s, 4, 4, 0);
	/* The window [0, 4) is known: layer 4 (seq 3) first. */
	assert_int_equal(next(s), 3);
	/* The window still starts at seq 0 and ends at 4. */
	assert_int_equal(next(s), 2);
	assert_int_equal(next(s), 1);
	assert_int_equal(next(s), 0);
	assert_int_equal(order_next(s, &seq), ORDER_EMPTY);
	/* Ties keep submission order. */
	sub(s, 10, 1, 0);
	sub(s, 11, 0, 0);
	sub(s, 12, 1, 0);
	sub(s, 13, 0, 0);
	assert_int_equal(next(s), 5);
	assert_int_equal(next(s), 7);
	assert_int_equal(next(s), 4);
	/* The window slid to [6, 10): not known until submitted or flushed. */
	assert_int_equal(order_next(s, &seq), ORDER_WAIT);
	order_flush(s);
	assert_int_equal(next(s), 6);
	order_destroy(s);
}

static void
test_priority_flush(void **state)
{
	struct order *s = mk(ORDER_PRIORITY, 0, 32);
	uint64_t seq;

	(void)state;
	for (int l = 5; l >= 0; l--)
		sub(s, (uint32_t)l, l, 0);
	/* Window 0: nothing before the flush. */
	assert_int_equal(order_next(s, &seq), ORDER_WAIT);
	order_flush(s);
	order_flush(s); /* a second flush at the same point is the same mark */
	/* The next step's tensors come before this step's last ones start,
	 * with better priorities: they stay behind the flush. */
	assert_int_equal(next(s), 5); /* layer 0 */
	sub(s, 100, -5, 0);
	sub(s, 101, -6, 0);
	for (int l = 1; l <= 5; l++)
		assert_int_equal(next(s), (uint64_t)(5 - l));
	/* Step 2 waits for its own flush. */
	assert_int_equal(order_next(s, &seq), ORDER_WAIT);
	order_flush(s);
	assert_int_equal(next(s), 7);
	assert_int_equal(next(s), 6);
	order_destroy(s);
}

static void
test_fence(void **state)
{
	struct order *s = mk(ORDER_PRIORITY, 8, 32);
	uint64_t seq;

	(void)state;
	sub(s, 1, 5, 0);
	sub(s, 2, 4, 0);
	sub(s, 99, 0, 1); /* barrier, seq 2 */
	sub(s, 3, -100, 0);
	/* The barrier closes the window: known without a flush. */
	assert_int_equal(next(s), 1);
	assert_int_equal(next(s), 0);
	assert_int_equal(next(s), 2);
	/* The window after it [3, 11) is not known. */
	assert_int_equal(order_next(s, &seq), ORDER_WAIT);
	order_flush(s);
	assert_int_equal(next(s), 3);
	/* Under fifo a barrier is one more operation in order. */
	order_destroy(s);
	s = mk(ORDER_FIFO, 0, 8);
	sub(s, 1, 5, 0);
	sub(s, 99, 0, 1);
	sub(s, 2, -1, 0);
	for (uint64_t i = 0; i < 3; i++)
		assert_int_equal(next(s), i);
	order_destroy(s);
}

static void
test_magnitude(void **state)
{
	struct order *s = mk(ORDER_MAGNITUDE, 0, 32);

	(void)state;
	/* Round 1: no norms yet, submission order. */
	for (uint32_t t = 0; t < 4; t++)
		sub(s, t, 0, 0);
	order_flush(s);
	for (uint64_t i = 0; i < 4; i++)
		assert_int_equal(next(s), i);
	assert_int_equal(order_set_norm(s, 0, 1.0), 0);
	assert_int_equal(order_set_norm(s, 1, 3.0), 0);
	assert_int_equal(order_set_norm(s, 2, 2.0), 0);
	assert_int_equal(order_set_norm(s, 3, 3.0), 0);
	/* Round 2: 1 and 3 tie (older first), then 2, then 0; a new tensor
	 * (no norm yet) first of all. */
	for (uint32_t t = 0; t < 4; t++)
		sub(s, t, 0, 0);
	sub(s, 9, 0, 0);
	order_flush(s);
	assert_int_equal(next(s), 8);
	assert_int_equal(next(s), 5);
	assert_int_equal(next(s), 7);
	assert_int_equal(next(s), 6);
	assert_int_equal(next(s), 4);
	order_destroy(s);
}

static void
test_capacity_and_bad_config(void **state)
{
	struct order_config c = { .policy = 3, .capacity = 4 };
	struct order *s;
	uint64_t seq;

	(void)state;
	assert_null(order_create(&c));
	c.policy = ORDER_FIFO;
	c.capacity = 0;
	assert_null(order_create(&c));
	s = mk(ORDER_PRIORITY, 2, 3);
	for (int i = 0; i < 3; i++)
		sub(s, 0, 0, 0);
	assert_int_equal(order_submit(s, 0, 0, 0, &seq), -ENOSPC);
	assert_int_equal(order_queued(s), 3);
	next(s);
	sub(s, 0, 0, 0);
	/* No norm slot left: the tensor counts as unknown, never a crash. */
	order_destroy(s);
	c.policy = ORDER_MAGNITUDE;
	c.capacity = 4;
	c.max_tensors = 1;
	s = order_create(&c);
	assert_int_equal(order_set_norm(s, 1, 1), 0);
	assert_int_equal(order_set_norm(s, 2, 1), -ENOSPC);
	assert_int_equal(order_set_norm(s, 1, 2), 0);
	order_destroy(s);
}

/* Under a window, the oldest operation starts within 'window' choices. */
static void
test_no_starvation(void **state)
{
	struct order *s = mk(ORDER_PRIORITY, 4, 64);
	uint64_t low = 0;
	int since = 0;

	(void)state;
	sub(s, 0, 1000, 0);
	for (int i = 0; i < 200; i++) {
		uint64_t seq;

		sub(s, (uint32_t)i + 1, -i, 0); /* always better */
		if (order_next(s, &seq) != 0)
			continue;
		if (seq == low) {
			since = 0;
			low = UINT64_MAX;
		} else {
			since++;
		}
		assert_true(since < 4);
		if (low == UINT64_MAX)
			break;
	}
	assert_int_equal(low, UINT64_MAX);
	order_destroy(s);
}

static struct order *
mkfuse(enum order_policy p, uint32_t window, uint32_t fuse_elems)
{
	struct order_config c = { .policy = p,
				  .window = window,
				  .capacity = 64,
				  .max_tensors = 64,
				  .fuse_elems = fuse_elems,
				  .fuse_max = 3 };
	struct order *s = order_create(&c);

	assert_non_null(s);
	return s;
}

static void
subn(struct order *s, int32_t prio, uint32_t n, uint8_t cls, int fence)
{
	struct order_op op = { .tensor_id = (uint32_t)prio,
			       .priority = prio,
			       .n = n,
			       .fuse_class = cls,
			       .fence = fence };
	uint64_t seq;

	assert_int_equal(order_submit_op(s, &op, &seq), 0);
}

/* The next group, as 'count' seqs. */
static void
group(struct order *s, uint32_t count, ...)
{
	uint64_t seqs[ORDER_FUSE_MAX];
	uint32_t n = 0;
	va_list ap;

	assert_int_equal(order_next_group(s, seqs, &n), 0);
	assert_int_equal(n, count);
	va_start(ap, count);
	for (uint32_t i = 0; i < count; i++)
		assert_int_equal(seqs[i], va_arg(ap, int));
	va_end(ap);
}

static void
test_fuse_fifo(void **state)
{
	struct order *s = mkfuse(ORDER_FIFO, 0, 100);
	uint64_t seqs[ORDER_FUSE_MAX];
	uint32_t n;

	(void)state;
	subn(s, 0, 10, 1, 0);
	/* Whether the next fits decides: wait for it. */
	assert_int_equal(order_next_group(s, seqs, &n), ORDER_WAIT);
	assert_true(order_waiting(s));
	subn(s, 1, 20, 1, 0);
	assert_int_equal(order_next_group(s, seqs, &n), ORDER_WAIT);
	subn(s, 2, 5000, 0, 0); /* too big: never fused */
	group(s, 2, 0, 1);
	group(s, 1, 2); /* a big one goes at once */
	subn(s, 3, 30, 1, 0);
	subn(s, 4, 30, 2, 0); /* another class ends the group */
	group(s, 1, 3);
	assert_int_equal(order_next_group(s, seqs, &n), ORDER_WAIT);
	order_flush(s); /* a flush ends it too */
	group(s, 1, 4);
	/* The limit: fuse_max 3, then up to fuse_elems. */
	for (int i = 0; i < 5; i++)
		subn(s, 5 + i, 10, 1, 0);
	group(s, 3, 5, 6, 7);
	subn(s, 10, 81, 1, 0); /* 10 + 10 + 81 > 100 */
	group(s, 2, 8, 9);
	subn(s, 11, 0, 0, 1); /* a barrier ends it */
	group(s, 1, 10);
	group(s, 1, 11);
	order_destroy(s);
}

static void
test_fuse_priority(void **state)
{
	struct order *s = mkfuse(ORDER_PRIORITY, 0, 100);

	(void)state;
	/* Backprop order, priority = layer; layer 2 is big. */
	subn(s, 4, 10, 1, 0);
	subn(s, 3, 10, 1, 0);
	subn(s, 2, 90, 1, 0);
	subn(s, 1, 10, 1, 0);
	subn(s, 0, 10, 1, 0);
	order_flush(s);
	/* Layer 0 and 1 (priority order), then 2 does not fit: the group
	 * stops there rather than let layer 3 pass layer 2. */
	group(s, 2, 4, 3);
	group(s, 2, 2, 1); /* 90 + 10 fits exactly */
	group(s, 1, 0);
	order_destroy(s);
}

/* A random program: submissions (tensor, priority), flushes, barriers. */
struct event {
	int kind; /* 0 submit, 1 flush, 2 barrier */
	uint32_t tensor;
	int32_t prio;
};

static uint64_t
rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Runs 'ev' on a scheduler; after each event it asks for next operations
 * with probability 'eager' (1: always, as a worker whose tensors are all
 * ready at once). Checks each choice's window and records the order. The
 * norm of a tensor after its k-th sum is a function of (tensor, k), as
 * every worker would compute it from the same bits. */
static unsigned
play(enum order_policy p, uint32_t window, const struct event *ev, unsigned n_ev, double eager,
     uint64_t seed, uint64_t *order_out, uint32_t fuse)
{
	struct order_config oc = { .policy = p,
				   .window = window,
				   .capacity = 1024,
				   .max_tensors = 64,
				   .fuse_elems = fuse,
				   .fuse_max = 4 };
	struct order *s = order_create(&oc);
	unsigned n = 0, count[16] = { 0 };
	uint32_t tensor_of[1024];
	int32_t prio_of[1024];
	int fence_of[1024];
	uint64_t x = seed | 1;

	for (unsigned i = 0; i <= n_ev; i++) {
		uint64_t seq;

		if (i < n_ev) {
			if (ev[i].kind == 1) {
				order_flush(s);
			} else {
				struct order_op op = {
					.tensor_id = ev[i].tensor,
					.priority = ev[i].prio,
					.fence = ev[i].kind == 2,
					.n = 1 + ev[i].tensor * 7,
					.fuse_class = (uint8_t)(ev[i].tensor % 3),
				};

				assert_int_equal(order_submit_op(s, &op, &seq), 0);
				tensor_of[order_submitted(s) - 1] = ev[i].tensor;
				prio_of[order_submitted(s) - 1] = ev[i].prio;
				fence_of[order_submitted(s) - 1] = ev[i].kind == 2;
			}
			if ((double)(rnd(&x) >> 11) * 0x1.0p-53 >= eager)
				continue;
		} else {
			order_flush(s);
		}
		uint64_t grp[ORDER_FUSE_MAX];
		uint32_t ng;

		while (order_next_group(s, grp, &ng) == 0) {
			for (uint32_t gi = 0; gi < ng; gi++) {
				uint32_t t = tensor_of[grp[gi]];

				seq = grp[gi];
				assert_true(ng == 1 || fuse);

				/* Fences: everything before a barrier started before it,
			 * and it before everything after it. */
				for (unsigned k = 0; k < n; k++) {
					if (order_out[k] > UINT64_MAX - ORDER_FUSE_MAX - 1)
						continue; /* a group's end */
					if (fence_of[seq])
						assert_true(order_out[k] < seq);
					if (fence_of[order_out[k]])
						assert_true(order_out[k] < seq);
				}
				for (unsigned k = n; p == ORDER_FIFO && k-- > 0;)
					if (order_out[k] < UINT64_MAX - ORDER_FUSE_MAX - 1) {
						assert_true(order_out[k] < seq);
						break;
					}
				(void)prio_of;
				order_out[n++] = seq;
				count[t % 16]++;
				order_set_norm(s, t,
					       (double)((t * 7919u + count[t % 16] * 104729u) %
							97));
			}
			/* A group's end, so that groupings are compared too. */
			order_out[n++] = UINT64_MAX - ng;
		}
	}
	assert_int_equal(order_queued(s), 0);
	order_destroy(s);
	return n; /* operations + groups */
}

static void
test_agreement(void **state)
{
	static struct event ev[400];
	static uint64_t a[2048], b[2048];
	uint64_t x = 12345;

	(void)state;
	for (int trial = 0; trial < 120; trial++) {
		uint32_t fuse = trial % 2 ? 0 : 40;
		enum order_policy p = (enum order_policy)((trial / 2) % 3);
		uint32_t window = (uint32_t)(rnd(&x) % 6); /* 0 (flush only) .. 5 */
		unsigned n_ev = 50 + (unsigned)(rnd(&x) % 300), n_sub = 0;
		unsigned na, nb;

		for (unsigned i = 0; i < n_ev; i++) {
			unsigned r = (unsigned)(rnd(&x) % 20);

			ev[i].kind = r < 2 ? 1 : r < 3 ? 2 : 0;
			ev[i].tensor = (uint32_t)(rnd(&x) % 12);
			ev[i].prio = (int32_t)(rnd(&x) % 5);
			n_sub += ev[i].kind != 1;
		}
		/* One eager worker, one that asks rarely, one at random. */
		na = play(p, window, ev, n_ev, 1.0, x, a, fuse);
		assert_true(na >= n_sub + (fuse ? 1 : n_sub) && na <= 2 * n_sub);
		nb = play(p, window, ev, n_ev, 0.05, x + 1, b, fuse);
		assert_int_equal(nb, na);
		assert_memory_equal(a, b, na * sizeof(a[0]));
		nb = play(p, window, ev, n_ev, 0.5, x + 2, b, fuse);
		assert_int_equal(nb, na);
		assert_memory_equal(a, b, na * sizeof(a[0]));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_ignores_priority),
		cmocka_unit_test(test_priority_window),
		cmocka_unit_test(test_priority_flush),
		cmocka_unit_test(test_fence),
		cmocka_unit_test(test_magnitude),
		cmocka_unit_test(test_capacity_and_bad_config),
		cmocka_unit_test(test_no_starvation),
		cmocka_unit_test(test_agreement),
		cmocka_unit_test(test_fuse_fifo),
		cmocka_unit_test(test_fuse_priority),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
