/* SPDX-License-Identifier: MIT */
/*
 * The one translation of the public sparsifier options (struct ina_sparsify,
 * ina.h) into the sparsifier library's configuration (sparsify.h): used by
 * the tensor round (tensor_round.c) and by ina-host's checker, which replays
 * every rank's sparsifier.
 */
#ifndef INA_HOST_SPARSIFY_OPTS_H
#define INA_HOST_SPARSIFY_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "ina.h"
#include "sparsify.h"

/* The library's configuration for options 'o' over 'n' elements in blocks of
 * 'block_size'. 0 or -EINVAL (bad options). */
int ina_sparsify_config(const struct ina_sparsify *o, size_t n, uint16_t block_size,
			struct sparsify_config *sc);

#endif
