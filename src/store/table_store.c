/*-------------------------------------------------------------------------
 *
 * table_store.c
 *	  Table directory and slot allocation.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "pg_fastckpt.h"
#include "access/fastckpt_am.h"
#include "store/arena.h"
#include "store/row_size.h"
#include "store/table_store.h"
#include "store/temp_quota.h"
#include "store/undo.h"

typedef struct FcStoreShared
{
	slock_t		lock;
	uint64		next_generation;
} FcStoreShared;

static HTAB *fc_tables = NULL;
static FcStoreShared *fc_store = NULL;
LWLockPadded *fc_slot_locks = NULL;
static LWLockPadded *fc_misc_locks = NULL;

/* Backend-local cache of a relation's storage, kept in rd_amcache. */
typedef struct FcTableRef
{
	FcTable    *tbl;
	uint64		generation;
	RelFileNode rnode;
} FcTableRef;

Size
fc_table_store_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(FcStoreShared)),
					hash_estimate_size(fc_max_tables, sizeof(FcTable)));
}

void
fc_table_store_shmem_init(void)
{
	HASHCTL		info;
	bool		found;

	fc_store = ShmemInitStruct("pg_fastckpt store", sizeof(FcStoreShared), &found);
	if (!found)
	{
		SpinLockInit(&fc_store->lock);
		fc_store->next_generation = 1;
	}
	info.keysize = sizeof(FcTableKey);
	info.entrysize = sizeof(FcTable);
	fc_tables = ShmemInitHash("pg_fastckpt tables", fc_max_tables, fc_max_tables,
							  &info, HASH_ELEM | HASH_BLOBS);
	fc_slot_locks = GetNamedLWLockTranche(FC_SLOT_LOCK_TRANCHE);
	fc_misc_locks = GetNamedLWLockTranche(FC_MISC_LOCK_TRANCHE);
}

LWLock *
fc_misc_lock(int which)
{
	return &fc_misc_locks[which].lock;
}

static void
fc_key_from_rnode(FcTableKey *key, const RelFileNode *rnode)
{
	memset(key, 0, sizeof(FcTableKey));
	key->dbid = rnode->dbNode;
	key->spcid = rnode->spcNode;
	key->relnode = rnode->relNode;
}

/* What fc_table_enter does with an existing entry of the relfilenode. */
typedef enum FcEnterMode
{
	FC_ENTER_RESET,				/* reset it: it is stale (recovery; CREATE
								 * DATABASE checked first) */
	FC_ENTER_KEEP,				/* return it as it is */
	FC_ENTER_REFUSE				/* raise an error: it belongs to another table */
} FcEnterMode;

/*
 * Enter a storage in the directory.  A storage entered with FC_ENTER_KEEP
 * counts as committed by create_csn.  rel names the table in errors
 * (NULL in recovery).
 */
static FcTable *
fc_table_enter(const RelFileNode *rnode, Relation rel, Oid relid,
			   uint32 image_capacity, bool is_temp, FcEnterMode mode,
			   uint64 create_csn)
{
	FcTableKey	key;
	FcTable    *tbl;
	bool		found;
	uint64		generation;

	/* a session's new temporary storage, within its share */
	if (is_temp && rel != NULL)
		fc_temp_quota_check_storage(RelationGetRelationName(rel));
	fc_key_from_rnode(&key, rnode);
	SpinLockAcquire(&fc_store->lock);
	generation = fc_store->next_generation++;
	SpinLockRelease(&fc_store->lock);

	LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_EXCLUSIVE);

	/*
	 * A shared hash grows past its size into the spare shared memory that
	 * PostgreSQL's lock table needs too: hold new tables to the setting.
	 * Recovery enters what the log holds, whatever the setting is now.
	 */
	if (rel != NULL && hash_get_num_entries(fc_tables) >= fc_max_tables &&
		hash_search(fc_tables, &key, HASH_FIND, NULL) == NULL)
		tbl = NULL;
	else
		tbl = hash_search(fc_tables, &key, HASH_ENTER_NULL, &found);
	if (tbl == NULL)
	{
		LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("too many fastckpt table storages"),
				 errdetail("pg_fastckpt.max_tables is %d; every fastckpt table, and every "
						   "TRUNCATE or rewrite not yet committed, uses one.", fc_max_tables),
				 errhint("Raise pg_fastckpt.max_tables and restart the server.")));
	}
	if (found && mode == FC_ENTER_KEEP)
	{
		LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
		return tbl;
	}
	if (found && mode == FC_ENTER_REFUSE)
	{
		/*
		 * PostgreSQL keeps a new relfilenode clear only of files of the same
		 * kind: a temporary table's file is named apart (t<backend>_<node>),
		 * so after the OID counter wraps around, a temporary and a lasting
		 * table (or two sessions' temporary tables) can be given the same
		 * number.  Their storages share our key; resetting the other's
		 * would lose its rows.
		 */
		bool		other_temp = tbl->is_temp;

		LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("cannot create the storage of fastckpt table \"%s\": relfilenode %u is in use",
						rel ? RelationGetRelationName(rel) : "?", rnode->relNode),
				 other_temp ?
				 errdetail("A temporary fastckpt table of database %u, tablespace %u has its storage under that number.",
						   rnode->dbNode, rnode->spcNode) :
				 errdetail("A fastckpt table of database %u, tablespace %u has its storage under that number.",
						   rnode->dbNode, rnode->spcNode),
				 errhint("Run the command again: it takes a new relfilenode.")));
	}
	if (found)
	{
		/* stale entry of a reused relfilenode */
		if (tbl->is_temp)
			fc_temp_quota_storage_removed(tbl->temp_owner);
		fc_table_reset(tbl);
	}

	memset((char *) tbl + sizeof(FcTableKey), 0, sizeof(FcTable) - sizeof(FcTableKey));
	tbl->generation = generation;
	tbl->relid = relid;
	tbl->is_temp = is_temp;
	tbl->temp_owner = is_temp && rel != NULL ? fc_temp_quota_owner() : -1;
	fc_pp_layout_init(&tbl->layout, sizeof(FcSlotHeader), image_capacity);
	tbl->slots_per_page = FC_PAGE_SIZE / tbl->layout.stride;
	Assert(tbl->slots_per_page >= 1);
	SpinLockInit(&tbl->alloc_lock);
	pg_atomic_init_u64(&tbl->nslots, 0);
	pg_atomic_init_u64(&tbl->live_rows, 0);
	pg_atomic_init_u64(&tbl->write_count, 0);
	fc_undo_init_table(tbl);
	if (mode == FC_ENTER_KEEP)
		tbl->create_csn = create_csn;	/* a committed table, empty */
	LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
	if (is_temp && rel != NULL)
		fc_temp_quota_storage_added(tbl->temp_owner);
	return tbl;
}

/* Recovery and CREATE DATABASE: a storage replacing any stale entry. */
FcTable *
fc_table_create(const RelFileNode *rnode, Oid relid, uint32 image_capacity,
				bool is_temp)
{
	return fc_table_enter(rnode, NULL, relid, image_capacity, is_temp,
						  FC_ENTER_RESET, 0);
}

/*
 * A new relfilenode of rel (CREATE TABLE, TRUNCATE, rewrites, SET
 * TABLESPACE); an error if another table's storage has its number.
 */
FcTable *
fc_table_create_new(const RelFileNode *rnode, Relation rel,
					uint32 image_capacity)
{
	return fc_table_enter(rnode, rel, RelationGetRelid(rel), image_capacity,
						  rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP,
						  FC_ENTER_REFUSE, 0);
}

/*
 * An empty storage for a table that exists but has none, or the one another
 * process entered first.  create_csn: see fc_storage_adopt.
 */
FcTable *
fc_table_adopt(const RelFileNode *rnode, Oid relid, uint32 image_capacity,
			   bool is_temp, uint64 create_csn)
{
	return fc_table_enter(rnode, NULL, relid, image_capacity, is_temp,
						  FC_ENTER_KEEP, create_csn);
}

FcTable *
fc_table_lookup(const RelFileNode *rnode)
{
	FcTableKey	key;
	FcTable    *tbl;

	fc_key_from_rnode(&key, rnode);
	LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_SHARED);
	tbl = hash_search(fc_tables, &key, HASH_FIND, NULL);
	LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
	return tbl;
}

/*
 * fc_table_lookup through a one-entry cache, for callers that look up the
 * same storage over and over (log replay); a miss is not cached.
 */
FcTable *
fc_table_lookup_cached(FcTableCache *cache, Oid dbid, Oid spcid, Oid relnode)
{
	if (cache->tbl != NULL && cache->rnode.dbNode == dbid &&
		cache->rnode.spcNode == spcid && cache->rnode.relNode == relnode)
		return cache->tbl;
	cache->rnode.dbNode = dbid;
	cache->rnode.spcNode = spcid;
	cache->rnode.relNode = relnode;
	cache->tbl = fc_table_lookup(&cache->rnode);
	return cache->tbl;
}

/* Like fc_table_lookup; the caller holds the directory lock. */
FcTable *
fc_table_find_locked(Oid dbid, Oid spcid, Oid relnode)
{
	FcTableKey	key;

	memset(&key, 0, sizeof(key));
	key.dbid = dbid;
	key.spcid = spcid;
	key.relnode = relnode;
	return hash_search(fc_tables, &key, HASH_FIND, NULL);
}

/*
 * The longest row image a live version of the table holds: what new
 * storage must at least take for a rewrite to keep every row.  The caller
 * holds the table locked against writers (a rewrite's AccessExclusiveLock).
 */
uint32
fc_table_max_live_len(FcTable *tbl)
{
	uint64		nslots = fc_table_nslots(tbl);
	uint32		longest = 0;

	for (uint64 s = 0; s < nslots; s++)
	{
		FcSlotHeader *hdr = fc_slot_header(tbl, s);

		if ((hdr->flags & (FC_SLOT_USED | FC_SLOT_DEAD)) == FC_SLOT_USED)
			longest = Max(longest, hdr->live_len);
	}
	return longest;
}

/*
 * Give all memory of a table back to the arena and empty it.  The caller
 * ensures nobody else uses the table (AccessExclusiveLock, or it is being
 * dropped); the new generation invalidates stale references.
 */
void
fc_table_reset(FcTable *tbl)
{
	uint64		npages = tbl->npages;

	if (tbl->is_temp)
		fc_temp_quota_pages_freed(tbl->temp_owner, npages + tbl->ndir_pages);
	for (uint64 p = 0; p < npages; p++)
		fc_arena_free_page(tbl->dir[p / FC_DIR_FANOUT][p % FC_DIR_FANOUT],
						   FC_PAGE_SLOTS);
	for (int t = 0; t < FC_DIR_TOP; t++)
		if (tbl->dir[t] != NULL)
		{
			fc_arena_free_page((char *) tbl->dir[t], FC_PAGE_DIRECTORY);
			tbl->dir[t] = NULL;
		}
	fc_undo_free_table(tbl);
	tbl->npages = 0;
	tbl->ndir_pages = 0;
	tbl->free_slot_head = 0;
	tbl->nfree_slots = 0;
	pg_atomic_write_u64(&tbl->nslots, 0);
	pg_atomic_write_u64(&tbl->live_rows, 0);
	SpinLockAcquire(&fc_store->lock);
	tbl->generation = fc_store->next_generation++;
	SpinLockRelease(&fc_store->lock);
}

/*
 * Empty a storage in place (TRUNCATE of a table created in the same
 * transaction).  Under the directory lock: the views and the checkpoint
 * writer read every storage's slots under it, and must not meet its pages
 * while they go back to the arena.
 */
void
fc_table_truncate(FcTable *tbl)
{
	LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_EXCLUSIVE);
	fc_table_reset(tbl);
	LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
}

void
fc_table_drop(const RelFileNode *rnode)
{
	fc_table_drop_kind(rnode, false, false);
}

/*
 * Drop a storage if it is of the given kind (with check_kind): a dropped
 * or truncated table leaves alone the storage of a table of the other kind
 * that was given its number (see FC_ENTER_REFUSE).
 */
void
fc_table_drop_kind(const RelFileNode *rnode, bool check_kind, bool is_temp)
{
	FcTableKey	key;
	FcTable    *tbl;

	fc_key_from_rnode(&key, rnode);
	LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_EXCLUSIVE);
	tbl = hash_search(fc_tables, &key, HASH_FIND, NULL);
	if (tbl != NULL && (!check_kind || tbl->is_temp == is_temp))
	{
		if (tbl->is_temp)
			fc_temp_quota_storage_removed(tbl->temp_owner);
		fc_table_reset(tbl);
		hash_search(fc_tables, &key, HASH_REMOVE, NULL);
	}
	LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
}

void
fc_table_drop_database(Oid dbid)
{
	HASH_SEQ_STATUS status;
	FcTable    *tbl;

	LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_EXCLUSIVE);
	hash_seq_init(&status, fc_tables);
	while ((tbl = hash_seq_search(&status)) != NULL)
	{
		if (tbl->key.dbid != dbid)
			continue;
		fc_table_reset(tbl);
		hash_search(fc_tables, &tbl->key, HASH_REMOVE, NULL);
	}
	LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
}

/* Recovery: forget every storage (a damaged checkpoint was half loaded). */
void
fc_table_drop_all(void)
{
	HASH_SEQ_STATUS status;
	FcTable    *tbl;

	LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_EXCLUSIVE);
	hash_seq_init(&status, fc_tables);
	while ((tbl = hash_seq_search(&status)) != NULL)
	{
		fc_table_reset(tbl);
		hash_search(fc_tables, &tbl->key, HASH_REMOVE, NULL);
	}
	LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
}

void
fc_table_foreach(fc_table_visitor fn, void *arg)
{
	HASH_SEQ_STATUS status;
	FcTable    *tbl;

	LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_SHARED);
	hash_seq_init(&status, fc_tables);
	while ((tbl = hash_seq_search(&status)) != NULL)
		fn(tbl, arg);
	LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
}

FcTable *
fc_table_for_rel(Relation rel)
{
	FcTableRef *ref = (FcTableRef *) rel->rd_amcache;
	FcTable    *tbl;

	if (ref != NULL && ref->tbl->generation == ref->generation &&
		RelFileNodeEquals(ref->rnode, rel->rd_node))
		return ref->tbl;

	tbl = fc_table_lookup(&rel->rd_node);
	if (tbl == NULL)
		tbl = fc_storage_adopt(rel);	/* its rows did not survive */
	if (tbl->is_temp != (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP))
	{
		/* see FC_ENTER_REFUSE: the other kind of table has its number */
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("fastckpt table \"%s\" has no storage: relfilenode %u is in use by a %s table",
						RelationGetRelationName(rel), rel->rd_node.relNode,
						tbl->is_temp ? "temporary" : "lasting"),
				 errdetail("Its rows did not come back at startup, and another table was given the same number since."),
				 errhint("End the session that holds the temporary table, or TRUNCATE this table to give it a new number.")));
	}
	if (ref == NULL)
	{
		ref = MemoryContextAlloc(CacheMemoryContext, sizeof(FcTableRef));
		rel->rd_amcache = ref;
	}
	ref->tbl = tbl;
	ref->generation = tbl->generation;
	ref->rnode = rel->rd_node;
	return tbl;
}

/*
 * Hand out a slot: a freed one first, else the next never-used one, growing
 * the table by a page when needed.  Pages are allocated with no spinlock
 * held (allocation can raise an error) and given back if another backend
 * grew the table first.  The caller fills the header and publishes
 * FC_SLOT_USED last; until then scans skip the slot.
 */
uint64
fc_slot_alloc(FcTable *tbl, Oid relid)
{
	for (;;)
	{
		uint64		slotno;
		uint64		npages;
		char	   *data;
		char	   *dir = NULL;
		int			added;

		SpinLockAcquire(&tbl->alloc_lock);
		if (tbl->free_slot_head != 0)
		{
			FcSlotHeader *hdr;

			slotno = tbl->free_slot_head - 1;
			hdr = fc_slot_header(tbl, slotno);
			tbl->free_slot_head = hdr->link;
			tbl->nfree_slots--;
			SpinLockRelease(&tbl->alloc_lock);
			hdr->link = 0;
			return slotno;
		}
		slotno = pg_atomic_read_u64(&tbl->nslots);
		npages = tbl->npages;
		if (slotno < npages * tbl->slots_per_page)
		{
			pg_atomic_write_u64(&tbl->nslots, slotno + 1);
			SpinLockRelease(&tbl->alloc_lock);
			return slotno;
		}
		SpinLockRelease(&tbl->alloc_lock);

		if (npages / FC_DIR_FANOUT >= FC_DIR_TOP)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("fastckpt table with OID %u has reached its maximum of " UINT64_FORMAT " slots",
							relid, (uint64) FC_DIR_TOP * FC_DIR_FANOUT * tbl->slots_per_page)));
		if (tbl->is_temp)
			fc_temp_quota_check_pages(tbl->dir[npages / FC_DIR_FANOUT] == NULL ? 2 : 1, relid);
		data = fc_arena_alloc_page(FC_PAGE_SLOTS, relid);
		if (tbl->dir[npages / FC_DIR_FANOUT] == NULL)
		{
			PG_TRY();
			{
				dir = fc_arena_alloc_page(FC_PAGE_DIRECTORY, relid);
			}
			PG_CATCH();
			{
				fc_arena_free_page(data, FC_PAGE_SLOTS);
				PG_RE_THROW();
			}
			PG_END_TRY();
		}

		added = 0;
		SpinLockAcquire(&tbl->alloc_lock);
		if (tbl->npages == npages)
		{
			uint64		top = npages / FC_DIR_FANOUT;

			if (tbl->dir[top] == NULL)
			{
				tbl->dir[top] = (char **) dir;
				tbl->ndir_pages++;
				dir = NULL;
				added++;
			}
			tbl->dir[top][npages % FC_DIR_FANOUT] = data;
			data = NULL;
			added++;
			pg_write_barrier();
			tbl->npages = npages + 1;
		}
		SpinLockRelease(&tbl->alloc_lock);
		if (tbl->is_temp)
			fc_temp_quota_pages_added(tbl->temp_owner, added);
		if (data != NULL)
			fc_arena_free_page(data, FC_PAGE_SLOTS);
		if (dir != NULL)
			fc_arena_free_page(dir, FC_PAGE_DIRECTORY);
	}
}

/* Return a dead slot, whose index entries are gone, to the free list. */
void
fc_slot_free(FcTable *tbl, uint64 slotno)
{
	FcSlotHeader *hdr = fc_slot_header(tbl, slotno);

	/* its old versions stay queued for reclaim, no longer linked */
	LWLockAcquire(fc_slot_lock(tbl, slotno), LW_EXCLUSIVE);
	hdr->flags = 0;
	fc_undo_detach_chain(hdr);
	LWLockRelease(fc_slot_lock(tbl, slotno));
	hdr->xlock = InvalidTransactionId;
	hdr->xlock_info = 0;
	SpinLockAcquire(&tbl->alloc_lock);
	hdr->link = tbl->free_slot_head;
	tbl->free_slot_head = slotno + 1;
	tbl->nfree_slots++;
	SpinLockRelease(&tbl->alloc_lock);
}

/*
 * Recovery: make slot slotno exist (with every slot before it), so that a
 * replayed row lands in the very slot its index entries will point to.
 * Only startup recovery calls this, before the tables open, but several
 * replay processes at once: nslots only ever grows, or another process's
 * slots past ours would fall out of the table.
 */
void
fc_slot_claim(FcTable *tbl, uint64 slotno, Oid relid)
{
	uint64		seen;

	while ((seen = fc_table_nslots(tbl)) <= slotno)
	{
		uint64		room;
		uint64		nslots;

		/* testing: widen the window before growing by a page */
		if (fc_test_replay_claim_pause_ms > 0 && seen % tbl->slots_per_page == 0)
			pg_usleep(fc_test_replay_claim_pause_ms * 1000L);

		/* hand out the rest of the last page at once, then grow a page */
		SpinLockAcquire(&tbl->alloc_lock);
		room = tbl->npages * tbl->slots_per_page;
		nslots = pg_atomic_read_u64(&tbl->nslots);
		if (nslots <= slotno && nslots < room)
			pg_atomic_write_u64(&tbl->nslots, Min(room, slotno + 1));
		SpinLockRelease(&tbl->alloc_lock);
		if (fc_table_nslots(tbl) <= slotno)
			(void) fc_slot_alloc(tbl, relid);
	}
}

/*
 * Recovery: after replay, chain the unused slots into the free list, clear
 * the replay bookkeeping kept in used slots' link word, and count the rows.
 */
void
fc_table_finish_replay(FcTable *tbl)
{
	uint64		nslots = fc_table_nslots(tbl);
	uint64		live = 0;
	uint64		head = 0;
	uint64		nfree = 0;

	/* nobody else uses the table before the gate opens */
	for (uint64 s = nslots; s-- > 0;)
	{
		FcSlotHeader *hdr = fc_slot_header(tbl, s);

		if (hdr->flags & FC_SLOT_USED)
		{
			hdr->link = 0;
			/* replayed calls leave dead versions for VACUUM */
			if (!TransactionIdIsValid(hdr->xmax) || (hdr->flags & FC_XMAX_ABORTED))
				live++;
			continue;
		}
		hdr->flags = 0;
		hdr->link = head;
		head = s + 1;
		nfree++;
	}
	SpinLockAcquire(&tbl->alloc_lock);
	tbl->free_slot_head = head;
	tbl->nfree_slots = nfree;
	SpinLockRelease(&tbl->alloc_lock);
	pg_atomic_write_u64(&tbl->live_rows, live);
}
