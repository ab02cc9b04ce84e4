/* SPDX-License-Identifier: MIT */
/*
 * The one translation of the public sparsifier options (struct ina_sparsify,
 * ina.h) into the sparsifier library's configuration (sparsify.h).
 */
#include <errno.h>

#include "sparsify_opts.h"

int
ina_sparsify_config(const struct ina_sparsify *o, size_t n, uint16_t block_size,
		    struct sparsify_config *sc)
{
	sparsify_config_init(sc);
	if (n == 0 || n > UINT32_MAX || (unsigned)o->mode > INA_SPARSIFY_BOTH)
		return -EINVAL;
	if (o->mode == INA_SPARSIFY_OFF)
		return 0; /* the other options do not matter */
	sc->n_elems = (uint32_t)n;
	sc->block_size = block_size;
	sc->select = (o->mode & INA_SPARSIFY_TOPK ? SPARSIFY_TOPK : 0) |
		     (o->mode & INA_SPARSIFY_FILTER ? SPARSIFY_FILTER : 0);
	switch (o->target) {
	case INA_TOPK_DENSITY:
		sc->target = SPARSIFY_DENSITY;
		break;
	case INA_TOPK_BYTES:
		sc->target = SPARSIFY_BYTES;
		break;
	case INA_TOPK_MASS:
		sc->target = SPARSIFY_MASS;
		break;
	default:
		return -EINVAL;
	}
	sc->density = o->density;
	sc->byte_budget = o->byte_budget;
	sc->mass = o->mass;
	sc->filter_mode = SPARSIFY_ELEMENT;
	sc->bound_mode = SPARSIFY_DECAY;
	sc->bound0 = o->filter_b0;
	sc->decay = o->filter_decay;
	return sparsify_config_check(sc);
}
