/* SPDX-License-Identifier: MIT */
/*
 * Job tokens. A job's secret is read from a file or the INA_JOB_TOKEN
 * environment variable (never argv, which ps shows) and hashed to the 64-bit
 * token every packet of the job carries; the first JOIN binds a job to it.
 */
#ifndef INA_TOKEN_H
#define INA_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define INA_TOKEN_ENV "INA_JOB_TOKEN"

/* The 64-bit token of a secret (XXH3-64 of its bytes). */
uint64_t ina_token_hash(const char *secret, size_t len);

/*
 * Loads the secret from 'file' (its first line, without the newline) when
 * 'file' is not NULL, else from $INA_JOB_TOKEN, and hashes it. An empty
 * secret is an error. Returns 0 or -errno with a message in 'err'.
 */
int ina_token_load(const char *file, uint64_t *token, char *err, size_t err_size);

#endif
