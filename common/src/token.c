/* SPDX-License-Identifier: MIT */
/* Job tokens (token.h): read the secret from a file or the environment, hash it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "ina/token.h"

uint64_t
ina_token_hash(const char *secret, size_t len)
{
	return XXH3_64bits(secret, len);
}

int
ina_token_load(const char *file, uint64_t *token, char *err, size_t err_size)
{
	char buf[1024];
	size_t len;

	if (file) {
		FILE *f = fopen(file, "r");

		if (!f) {
			int e = errno;

			snprintf(err, err_size, "token file %s: %s", file, strerror(e));
			return -e;
		}
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	} else {
		const char *env = getenv(INA_TOKEN_ENV);

		if (!env) {
			snprintf(err, err_size, "no job token: give --token-file FILE or set %s",
				 INA_TOKEN_ENV);
			return -ENOENT;
		}
		snprintf(buf, sizeof(buf), "%s", env);
	}
	len = strcspn(buf, "\r\n");
	if (len == 0) {
		snprintf(err, err_size, "job token %s%s is empty", file ? "file " : "from $",
			 file ? file : INA_TOKEN_ENV);
		return -EINVAL;
	}
	*token = ina_token_hash(buf, len);
	return 0;
}
