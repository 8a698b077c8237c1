/*-------------------------------------------------------------------------
 *
 * relid_cache.c
 *	  Per-backend caches keyed by a relation's OID, emptied by any relcache
 *	  invalidation.
 *
 * For facts read from the catalogs about a table that its own relcache
 * entry does not cover (its ancestors' triggers, the sequences it owns):
 * the catalog change that alters them may invalidate another relation, so
 * every invalidation empties the whole cache.  Entries start with the OID.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"

#include "access/fastckpt_am.h"

static void
fc_relid_cache_empty(Datum arg, Oid relid)
{
	HTAB	   *cache = (HTAB *) DatumGetPointer(arg);
	HASH_SEQ_STATUS status;
	Oid		   *entry;

	hash_seq_init(&status, cache);
	while ((entry = hash_seq_search(&status)) != NULL)
		(void) hash_search(cache, entry, HASH_REMOVE, NULL);
}

HTAB *
fc_relid_cache_create(const char *name, Size entrysize)
{
	HASHCTL		ctl;
	HTAB	   *cache;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = entrysize;
	ctl.hcxt = TopMemoryContext;
	cache = hash_create(name, 64, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	CacheRegisterRelcacheCallback(fc_relid_cache_empty, PointerGetDatum(cache));
	return cache;
}
