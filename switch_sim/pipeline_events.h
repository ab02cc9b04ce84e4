/* SPDX-License-Identifier: MIT */
/*
 * What the pipeline reports instead of logging: a job admitted, refused,
 * freed, reshaped, taken over... The pipeline neither formats nor prints a
 * line; it hands each event, as numbers, to the callback its config names
 * (pipeline_config.on_event), at the moment it happens, and the program
 * decides what to do with it (pipeline_log.h writes the switch's log lines).
 * The event and the text it points to live until the callback returns.
 */
#ifndef INA_PIPELINE_EVENTS_H
#define INA_PIPELINE_EVENTS_H

#include <stdint.h>

enum pipeline_event_kind {
	PEV_ADMITTED,	      /* job admitted: lanes (of want_lanes), weight,
				 * epoch, world, encoding, max_block, standby */
	PEV_REFUSED,	      /* an ERROR sent to 'rank': text (the message) */
	PEV_REDIRECTED,	      /* sent to the host aggregator (ipv4, port):
				 * text says why */
	PEV_FREED,	      /* the job's 'slots' slots went back to the pool */
	PEV_EXPIRED,	      /* the job was silent for 'ms': freed */
	PEV_GIVE_BACK,	      /* the job shrinks from 'want_lanes' to 'lanes'
				 * lanes from 'round', for job 'other_job' */
	PEV_RESHAPED,	      /* the job runs on 'lanes' lanes from 'round';
				 * 'slots' slots given back */
	PEV_STANDBY_REPLACED, /* a standby job's epoch 'old_epoch' replaced by
				 * 'epoch' (it re-joined the primary) */
	PEV_RANK_DEAD,	      /* 'other_rank' silent for 'ms' while 'rank'
				 * waits on it (lane, block, round): aborted */
	PEV_RANK_LEFT,	      /* 'rank' left the job */
	PEV_TAKEOVER,	      /* 'rank' reports the primary silent: the job is
				 * taken over, 'old_epoch' -> 'epoch' */
	PEV_UP_JOINED,	      /* a rack's job joined the spine as 'rank' of
				 * 'world', 'epoch' */
	PEV_UP_ERROR,	      /* the spine sent ERROR 'status' (text): the job
				 * ends here too */
	PEV_MAX,
};

struct pipeline_event {
	uint8_t kind; /* enum pipeline_event_kind */
	uint8_t standby;
	uint8_t encoding; /* enum ina_encoding */
	uint8_t weight;	  /* 0 counts as 1 */
	uint32_t job_id;
	uint16_t rank;
	uint16_t other_rank;
	uint16_t world;
	uint16_t lanes;
	uint16_t want_lanes;
	uint16_t max_block;
	uint16_t lane;
	uint16_t status;
	uint16_t port; /* host order */
	uint32_t ipv4; /* host order */
	uint32_t slots;
	uint32_t epoch;
	uint32_t old_epoch;
	uint32_t round;
	uint32_t block;
	uint32_t other_job;
	uint64_t ms;
	const char *text; /* NULL, or 'text_len' bytes (not terminated) */
	uint32_t text_len;
};

/* Called by the pipeline for each event; 'ctx' is the config's event_ctx. */
typedef void (*pipeline_event_fn)(void *ctx, const struct pipeline_event *ev);

#endif
