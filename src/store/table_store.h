/*-------------------------------------------------------------------------
 *
 * table_store.h
 *	  Directory of table storages keyed by (database, tablespace,
 *	  relfilenode); slot allocation within a table.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_TABLE_STORE_H
#define FC_TABLE_STORE_H

#include "postgres.h"

#include "storage/relfilenode.h"
#include "store/slot.h"
#include "utils/rel.h"

extern FcTable *fc_table_create(const RelFileNode *rnode, Oid relid,
								uint32 image_capacity, bool is_temp);
extern FcTable *fc_table_create_new(const RelFileNode *rnode, Relation rel,
									uint32 image_capacity);
extern FcTable *fc_table_adopt(const RelFileNode *rnode, Oid relid,
							   uint32 image_capacity, bool is_temp,
							   uint64 create_csn);
extern FcTable *fc_table_lookup(const RelFileNode *rnode);

/* The last storage looked up: a record's rows mostly share one (replay). */
typedef struct FcTableCache
{
	RelFileNode rnode;
	FcTable    *tbl;
} FcTableCache;

extern FcTable *fc_table_lookup_cached(FcTableCache *cache, Oid dbid, Oid spcid,
									   Oid relnode);
extern FcTable *fc_table_find_locked(Oid dbid, Oid spcid, Oid relnode);
extern void fc_table_drop(const RelFileNode *rnode);
extern void fc_table_drop_kind(const RelFileNode *rnode, bool check_kind,
							   bool is_temp);
extern void fc_table_drop_database(Oid dbid);
extern void fc_table_drop_all(void);
extern void fc_table_reset(FcTable *tbl);
extern void fc_table_truncate(FcTable *tbl);
extern uint32 fc_table_max_live_len(FcTable *tbl);

/* Storage of an open relation; created empty if missing (fc_storage_adopt). */
extern FcTable *fc_table_for_rel(Relation rel);

extern uint64 fc_slot_alloc(FcTable *tbl, Oid relid);
extern void fc_slot_free(FcTable *tbl, uint64 slotno);
extern void fc_slot_claim(FcTable *tbl, uint64 slotno, Oid relid);
extern void fc_table_finish_replay(FcTable *tbl);

static inline uint64
fc_table_nslots(FcTable *tbl)
{
	return pg_atomic_read_u64(&tbl->nslots);
}

/* Virtual blocks holding nslots slots. */
static inline BlockNumber
fc_blocks_of_slots(uint64 nslots)
{
	return (BlockNumber) ((nslots + FC_SLOTS_PER_BLOCK - 1) / FC_SLOTS_PER_BLOCK);
}

static inline BlockNumber
fc_table_nblocks(FcTable *tbl)
{
	return fc_blocks_of_slots(fc_table_nslots(tbl));
}

/* Visit every table storage (for the stats views); fn runs under a lock. */
typedef void (*fc_table_visitor) (FcTable *tbl, void *arg);
extern void fc_table_foreach(fc_table_visitor fn, void *arg);

#endif							/* FC_TABLE_STORE_H */
