/* SPDX-License-Identifier: MIT */
/*
 * The API's error codes: the engine's (enum engine_err) mapped to ina.h's
 * INA_E* in one table, and a sentence for each code (ina_strerror).
 */
#include <string.h>

#include "ina_int.h"

/* The engine's codes and the API's: one row each. */
static const struct {
	int engine;
	int api;
} err_map[] = {
	{ ENGINE_ENOSWITCH, INA_ENOSWITCH },   { ENGINE_EREFUSED, INA_EREFUSED },
	{ ENGINE_EPEER, INA_EPEER },	       { ENGINE_ELEFT, INA_ELEFT },
	{ ENGINE_ESATURATED, INA_ESATURATED }, { ENGINE_ENONFINITE, INA_ENONFINITE },
	{ ENGINE_EPROTO, INA_EPROTO },
};

int
ina_err_of_engine(int err)
{
	for (size_t i = 0; i < sizeof(err_map) / sizeof(err_map[0]); i++)
		if (err_map[i].engine == err)
			return err_map[i].api;
	return err; /* 0, or -errno */
}

const char *
ina_strerror(int err)
{
	switch (err) {
	case 0:
		return "success";
	case INA_ENOSWITCH:
		return "the switch did not answer";
	case INA_EREFUSED:
		return "the switch refused the job";
	case INA_EPEER:
		return "peers did not contribute in time";
	case INA_ELEFT:
		return "another rank left the job";
	case INA_ESATURATED:
		return "an i32 sum saturated";
	case INA_ENONFINITE:
		return "NaN or infinity in an i32 tensor";
	case INA_ECLOSED:
		return "the context is closed or failed earlier";
	case INA_EPORT:
		return "the transport could not start";
	case INA_EPROTO:
		return "the switch answered against the protocol";
	default:
		return err < 0 && err > -4096 ? strerror(-err) : "unknown error";
	}
}
