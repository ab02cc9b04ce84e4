/* SPDX-License-Identifier: MIT */
/*
 * The table behind ina_config_set() (config_keys.c): every settable field of
 * struct ina_config by its name in ina.h, exposed for the test that checks
 * it covers the struct.
 */
#ifndef INA_CONFIG_KEYS_H
#define INA_CONFIG_KEYS_H

#include <stddef.h>

/* String fields a config of ina_config_new() owns a copy of. */
#define CONFIG_MAX_STRINGS 4

enum config_key_type {
	CK_UINT,       /* unsigned of 'size' bytes (or an enum's int), min..max */
	CK_INT,	       /* an int flag, min..max */
	CK_REAL,       /* float or double (by 'size'), in [min, max] */
	CK_REAL_OPEN0, /* ... in (min, max] */
	CK_ENUM,       /* an enum by the names of its values min..max */
	CK_STR,	       /* a string the config owns, in string slot 'slot' */
	CK_TOKEN_FILE, /* the token from a secret file: no field of its own */
	CK_KEY,	       /* a 32-byte key, 64 hex digits or base64 (auth.h) */
};

struct config_key {
	const char *name;
	enum config_key_type type;
	size_t offset, size;
	double min, max;
	const char *const *names; /* CK_ENUM: indexed by value */
	unsigned slot;		  /* CK_STR */
};

unsigned config_key_count(void);
const struct config_key *config_key_at(unsigned i);

#endif
