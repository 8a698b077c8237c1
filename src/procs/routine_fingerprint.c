/*-------------------------------------------------------------------------
 *
 * routine_fingerprint.c
 *	  A digest of what a registered routine is, that survives pg_dump.
 *
 * Registration vouches for one definition of a routine.  Within a cluster
 * the version of its pg_proc row (xmin) tells whether it changed since, but
 * a pg_dump and restore recreates every routine under new row versions:
 * the registry's rows come back, and without more every registered routine
 * would look redefined and its calls fall back for good.  The fingerprint
 * is a SHA-256 over the routine's CREATE statement as pg_get_functiondef
 * prints it, with every name schema-qualified so that the caller's
 * search_path does not change it, and constants printed in fixed styles
 * (dates in ISO, times in UTC ...), so that the caller's settings do not.
 * Its owner and privileges are left out: changing them is a catalog
 * change, which a checkpoint separates from the calls made before it
 * (catalog_watch.c), and role OIDs do not survive a restore.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/cryptohash.h"
#include "common/sha2.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/syscache.h"

#include "procs/procs.h"

PG_FUNCTION_INFO_V1(fastckpt_routine_fingerprint);

/* What pg_get_functiondef's text depends on besides the routine */
static const char *const fc_fingerprint_settings[][2] = {
	{"search_path", "pg_catalog"},
	{"quote_all_identifiers", "off"},
	{"DateStyle", "ISO, MDY"},
	{"IntervalStyle", "postgres"},
	{"TimeZone", "UTC"},
	{"extra_float_digits", "3"},
	{"bytea_output", "hex"},
	{"lc_monetary", "C"},
};

/*
 * Hex SHA-256 of the routine's definition into fingerprint
 * (FC_FINGERPRINT_LEN + 1 bytes).  False if the routine does not exist.
 */
bool
fc_routine_fingerprint(Oid funcid, char *fingerprint)
{
	int			nestlevel;
	text	   *definition;
	pg_cryptohash_ctx *ctx;
	uint8		digest[PG_SHA256_DIGEST_LENGTH];

	if (!SearchSysCacheExists1(PROCOID, ObjectIdGetDatum(funcid)))
		return false;

	/*
	 * Names print the same whatever the session's path and quoting, and
	 * constants (an argument's DEFAULT) whatever its output settings.
	 */
	nestlevel = NewGUCNestLevel();
	for (int i = 0; i < lengthof(fc_fingerprint_settings); i++)
		(void) set_config_option(fc_fingerprint_settings[i][0], fc_fingerprint_settings[i][1],
								 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	definition = DatumGetTextPP(OidFunctionCall1(F_PG_GET_FUNCTIONDEF,
												 ObjectIdGetDatum(funcid)));
	AtEOXact_GUC(true, nestlevel);

	ctx = pg_cryptohash_create(PG_SHA256);
	if (pg_cryptohash_init(ctx) < 0 ||
		pg_cryptohash_update(ctx, (uint8 *) VARDATA_ANY(definition),
							 VARSIZE_ANY_EXHDR(definition)) < 0 ||
		pg_cryptohash_final(ctx, digest, sizeof(digest)) < 0)
		elog(ERROR, "could not compute the fingerprint of routine %u: %s",
			 funcid, pg_cryptohash_error(ctx));
	pg_cryptohash_free(ctx);
	for (int i = 0; i < PG_SHA256_DIGEST_LENGTH; i++)
		snprintf(fingerprint + 2 * i, 3, "%02x", digest[i]);
	return true;
}

/* SQL: the fingerprint a registration of this routine would record now. */
Datum
fastckpt_routine_fingerprint(PG_FUNCTION_ARGS)
{
	char		fingerprint[FC_FINGERPRINT_LEN + 1];

	if (!fc_routine_fingerprint(PG_GETARG_OID(0), fingerprint))
		PG_RETURN_NULL();
	PG_RETURN_TEXT_P(cstring_to_text(fingerprint));
}
