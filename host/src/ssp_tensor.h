/* SPDX-License-Identifier: MIT */
/*
 * One tensor's state under ssp:S (docs/PROTOCOL.md 6.7) for the C API: its
 * residual, and S + 1 slots, one per round in flight, each with what that
 * round sends (the caller's input plus the residual, so the caller's buffer
 * is free at once) and the per-block flags of blocks whose own part did not
 * count (a PARTIAL result without this rank, or DEFERRED), which go back to
 * the residual when the round ends: nothing is lost, only late. It also keeps
 * the ring of ina_allreduce(): each call's handle and result buffer, so the
 * call can return the sum of S calls back. Pure memory, no engine, no port.
 */
#ifndef INA_SSP_TENSOR_H
#define INA_SSP_TENSOR_H

#include <stddef.h>
#include <stdint.h>

struct ssp_tensor;

/* A tensor 'id' of 'n' floats in blocks of 'block_size' under ssp:'s'; NULL
 * with errno set. */
struct ssp_tensor *ssp_tensor_create(uint32_t id, size_t n, uint16_t block_size, uint8_t s);
void ssp_tensor_destroy(struct ssp_tensor *t); /* Accepts NULL. */
uint32_t ssp_tensor_id(const struct ssp_tensor *t);
size_t ssp_tensor_n(const struct ssp_tensor *t);

/*
 * A round starts: a free slot's send buffer becomes 'in' + the residual (the
 * residual is then 0) and its flags are zeroed. Returns the slot (>= 0) with
 * '*send' and '*missed' (one byte per block) valid until ssp_tensor_end(), or
 * -EBUSY when S + 1 rounds of the tensor are in flight.
 */
int ssp_tensor_begin(struct ssp_tensor *t, const float *in, const float **send, uint8_t **missed);
/* The round of 'slot' ended (well or not): each flagged block of what it
 * sent goes back to the residual, and the slot is free. */
void ssp_tensor_end(struct ssp_tensor *t, int slot);
const float *ssp_tensor_residual(const struct ssp_tensor *t);

/* ina_allreduce()'s ring: calls started, calls returned, and for call c its
 * handle and result buffer (slot c mod (S + 1)). */
uint64_t *ssp_tensor_handle(struct ssp_tensor *t, uint64_t call);
float *ssp_tensor_out(struct ssp_tensor *t, uint64_t call);
uint64_t ssp_tensor_calls(const struct ssp_tensor *t);
uint64_t ssp_tensor_returned(const struct ssp_tensor *t);
void ssp_tensor_called(struct ssp_tensor *t);
void ssp_tensor_return(struct ssp_tensor *t);

#endif
