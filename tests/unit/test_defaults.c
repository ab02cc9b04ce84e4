/* SPDX-License-Identifier: MIT */
/*
 * One set of defaults (issue 16 point 4): what ina_config_init() gives a
 * library user for the fields the host engine also has (world, lanes,
 * encoding, the timeouts) is what engine_config_init() writes, the one place
 * they are set; the block size is left unset, for ina_open() to take the
 * engine's (or, planned, what a packet holds); the fields only the API has
 * keep their documented values (ina.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "engine.h"
#include "ina.h"
#include "ina/util.h"
#include "ina/wire.h"
#include "tensor_round.h"

static void
api_takes_the_engines_defaults(void **state)
{
	struct engine_config ec;
	struct ina_config cfg;

	(void)state;
	engine_config_init(&ec);
	ina_config_init(&cfg);
	assert_int_equal(cfg.world, ec.world);
	assert_int_equal(cfg.lanes, ec.lanes);
	/* Unset: ina_open() takes the engine's, or with the planner what a
	 * packet holds (tensor_round.h tround_job_block()). */
	assert_int_equal(cfg.block_size, 0);
	assert_int_equal(tround_job_block(cfg.block_size, 0, 0, INA_ENC_F32, 9000, ec.max_block),
			 ec.max_block);
	assert_int_equal(ec.encoding, INA_ENC_F32);
	assert_int_equal(cfg.encoding, INA_F32);
	assert_true((uint64_t)cfg.timeout_ms * INA_NS_PER_MS == ec.timeout_ns);
	assert_true((uint64_t)cfg.rto_us * 1000 == ec.rto_ns);
	assert_true((uint64_t)cfg.failover_ms * INA_NS_PER_MS == ec.failover_ns);
	assert_true((uint64_t)cfg.pause_ms * INA_NS_PER_MS == ec.pause_ns);
	/* The engine sends no KEEPALIVE unless asked; an open context does. */
	assert_true(ec.keepalive_ns == 0);
	assert_int_equal(cfg.keepalive_ms, 1000);
}

/* The values ina.h documents, so that moving the source of the defaults
 * changed none of them. */
static void
documented_values(void **state)
{
	struct ina_config cfg;

	(void)state;
	ina_config_init(&cfg);
	assert_int_equal(cfg.size, sizeof(cfg));
	assert_string_equal(cfg.port, "udp");
	assert_int_equal(cfg.world, 1);
	assert_int_equal(cfg.lanes, 64);
	assert_int_equal(cfg.block_size, 0); /* 1024 unless planned */
	assert_int_equal(cfg.timeout_ms, 10000);
	assert_int_equal(cfg.rto_us, 5000);
	assert_int_equal(cfg.failover_ms, 1000);
	assert_int_equal(cfg.pause_ms, 600000);
	assert_int_equal(cfg.max_pending, 256);
	assert_int_equal(cfg.sched, INA_SCHED_FIFO);
	assert_int_equal(cfg.sparsify.mode, INA_SPARSIFY_OFF);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(api_takes_the_engines_defaults),
		cmocka_unit_test(documented_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
