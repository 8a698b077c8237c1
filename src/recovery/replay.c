/*-------------------------------------------------------------------------
 *
 * replay.c
 *	  Rebuild the store from the logical log at startup.
 *
 * The leader reads the log once to find where it ends (the first record
 * that does not validate: the torn tail of a crash), which transactions do
 * not count (aborted, by CSN: PostgreSQL may reuse an xid after a crash, a
 * CSN is never reused; or flagged and not committed according to
 * PostgreSQL's commit log) and the largest CSN.  It applies the DDL
 * records that count, in log order, so that every storage the log ends
 * with exists.  Then the row images and tombstones of VALUES records are
 * applied in parallel (replay_workers.c): each process reads the whole log
 * and applies only the rows of its partition of slots, so no two touch a
 * slot and no slot needs a lock.  Order between records does not matter:
 * per slot the largest CSN wins (SiloR, section 6.3), which the slot's link
 * word tracks while recovery runs, and a row older than its storage's
 * creation belongs to an earlier storage of the same relfilenode.  A row is
 * written into the very slot it had, so index entries rebuilt from the
 * table match.
 *
 * Afterwards the log is cut at its end, so that the next record is never
 * followed by stale bytes of the torn tail.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "pg_fastckpt.h"
#include "log/log.h"
#include "recovery/gate.h"
#include "recovery/replay.h"
#include "store/table_store.h"
#include "txn/write_set.h"

/* A set of xids (commit status) or CSNs (records that do not count) */
typedef struct FcXidEntry
{
	uint64		key;
	bool		committed;
} FcXidEntry;

/* One process's walk over its partition of the rows */
typedef struct FcRowPass
{
	const FcReplayPlan *plan;
	uint32		part;
	FcReplayPart counts;
	FcTableCache cache;
} FcRowPass;

static HTAB *
fc_xid_set_create(const char *name)
{
	HASHCTL		ctl;

	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(FcXidEntry);
	return hash_create(name, 1024, &ctl, HASH_ELEM | HASH_BLOBS);
}

/*
 * Did PostgreSQL commit this transaction?  An xid at or past the next xid
 * belongs to WAL that was lost; an xid older than the commit log kept is
 * taken as committed (its ABORT record, if any, voids it already).
 */
static bool
fc_xid_committed(HTAB *clog, uint64 fxid_u64)
{
	FcXidEntry *e;
	bool		found;
	FullTransactionId fxid = FullTransactionIdFromU64(fxid_u64);
	TransactionId xid = XidFromFullTransactionId(fxid);

	e = hash_search(clog, &fxid_u64, HASH_ENTER, &found);
	if (found)
		return e->committed;
	if (!FullTransactionIdPrecedes(fxid, ReadNextFullTransactionId()) ||
		!TransactionIdIsNormal(xid))
		e->committed = false;
	else if (TransactionIdPrecedes(xid, ShmemVariableCache->oldestClogXid))
		e->committed = true;
	else
		e->committed = TransactionIdDidCommit(xid);
	return e->committed;
}

/* Does the record with this CSN count?  (Binary search of the skip list.) */
static bool
fc_replay_counts(const FcReplayPlan *plan, uint64 csn)
{
	const uint64 *skip = FC_PLAN_SKIP(plan);
	uint64		lo = 0;
	uint64		hi = plan->nskip;

	while (lo < hi)
	{
		uint64		mid = lo + (hi - lo) / 2;

		if (skip[mid] == csn)
			return false;
		if (skip[mid] < csn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return true;
}

/* Is this record left to the database's serial replay (call_replay.c)? */
static bool
fc_replay_is_serial(const FcReplayPlan *plan, const fc_log_header *rec)
{
	const uint64 *serial = FC_PLAN_SERIAL(plan);

	for (uint32 i = 0; i < plan->nserial; i++)
		if (serial[2 * i] == rec->dbid)
			return rec->csn >= serial[2 * i + 1];
	return false;
}

/* Which partition a slot's rows belong to: runs of 4096 slots, dealt round */
static inline uint32
fc_replay_part_of(const FcReplayPlan *plan, uint64 slotno)
{
	return (uint32) ((slotno >> 12) % plan->nparts);
}

static void
fc_replay_ddl(const fc_log_header *rec, FcReplayResult *res)
{
	fc_log_cursor cur;
	const fc_log_ddl *d;

	fc_log_cursor_init(&cur, rec);
	while (fc_log_next_ddl(&cur, &d))
	{
		RelFileNode rnode;

		rnode.dbNode = d->dbid;
		rnode.spcNode = d->spcid;
		rnode.relNode = d->relnode;
		switch (d->op)
		{
			case FC_DDL_CREATE:
				fc_table_create(&rnode, d->relid, d->image_capacity, false)->create_csn = rec->csn;
				res->tables_created++;
				break;
			case FC_DDL_DROP:
				fc_table_drop(&rnode);
				break;
			case FC_DDL_DROP_DATABASE:
				fc_table_drop_database(d->dbid);
				break;
			default:
				elog(WARNING, "pg_fastckpt: unknown DDL entry %u in log record at %llu",
					 d->op, (unsigned long long) rec->lsn);
		}
	}
}

/*
 * Put a logged row image into its slot as a committed, frozen row and into
 * the current shadow image (for the next checkpoint).  link: the replay
 * bookkeeping the caller keeps in the slot.
 */
void
fc_replay_put_image(FcTable *tbl, uint64 slotno, const char *image, uint32 len,
					uint64 phase, uint64 link)
{
	uint64		page;
	char	   *sp = fc_slot_locate(tbl, slotno, &page);
	FcSlotHeader *hdr = (FcSlotHeader *) sp;

	fc_slot_set_new_row(tbl, sp, image, len, FrozenTransactionId, FirstCommandId);
	ItemPointerSetInvalid(&hdr->next_tid);
	hdr->flags = FC_SLOT_USED | FC_XMIN_COMMITTED | FC_XMIN_FROZEN;
	hdr->link = link;
	fc_slot_install_live(tbl, sp, page, phase);
}

static void
fc_replay_row(FcRowPass *pass, const fc_log_header *rec,
			  const fc_log_row *row, const char *image)
{
	FcTable    *tbl;
	char	   *sp;
	uint64		page;
	FcSlotHeader *hdr;

	if (fc_replay_part_of(pass->plan, row->slotno) != pass->part)
		return;
	tbl = fc_table_lookup_cached(&pass->cache, rec->dbid, row->spcid, row->relnode);
	if (tbl == NULL || rec->csn < tbl->create_csn)
	{
		/* its storage was dropped later (or never reached the log) */
		pass->counts.rows_skipped++;
		return;
	}
	if (row->len == FC_LOG_TOMBSTONE)
	{
		if (row->slotno >= fc_table_nslots(tbl))
			return;
		sp = fc_slot_locate(tbl, row->slotno, &page);
		hdr = (FcSlotHeader *) sp;
		if (hdr->link > rec->csn)
			return;
		hdr->flags = 0;
		hdr->link = rec->csn;
		fc_slot_install_tombstone(tbl, sp, page, pass->plan->phase);
		pass->counts.rows_applied++;
		return;
	}
	if (row->len > tbl->layout.image_capacity)
	{
		ereport(WARNING,
				(errmsg("pg_fastckpt: log record at %llu holds a %u-byte row for a table whose rows hold at most %u bytes; row skipped",
						(unsigned long long) rec->lsn, row->len, tbl->layout.image_capacity)));
		pass->counts.rows_skipped++;
		return;
	}
	fc_slot_claim(tbl, row->slotno, tbl->relid);
	if (fc_slot_header(tbl, row->slotno)->link > rec->csn)
		return;
	fc_replay_put_image(tbl, row->slotno, image, row->len, pass->plan->phase, rec->csn);
	pass->counts.rows_applied++;
}

/*
 * Apply the rows of one partition: every VALUES record that counts, from
 * the plan's start to its end.  Partition 0 also counts the records, and
 * with report set, logs progress.
 */
void
fc_replay_rows(const FcReplayPlan *plan, uint32 part, FcReplayPart *counts, bool report)
{
	FcRowPass	pass;
	FcLogReader *reader;
	const fc_log_header *rec;
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz last_report = start;
	uint64		nrecords = 0;

	memset(&pass, 0, sizeof(pass));
	pass.plan = plan;
	pass.part = part;
	reader = fc_log_reader_open(plan->start_lsn);
	while ((rec = fc_log_reader_next(reader)) != NULL && rec->lsn < plan->end_lsn)
	{
		fc_log_cursor cur;
		const fc_log_row *row;
		const char *image;

		fc_worker_check_interrupts();
		if (rec->kind != FC_REC_VALUES || rec->csn < plan->min_csn ||
			fc_replay_is_serial(plan, rec))
			continue;
		if (!fc_replay_counts(plan, rec->csn))
		{
			pass.counts.records_skipped++;
			continue;
		}
		pass.counts.records_applied++;
		fc_log_cursor_init(&cur, rec);
		while (fc_log_next_row(&cur, &row, &image))
			fc_replay_row(&pass, rec, row, image);
		if (cur.corrupt && part == 0)
			ereport(WARNING,
					(errmsg("pg_fastckpt: log record at %llu has malformed entries",
							(unsigned long long) rec->lsn)));

		if (report && (++nrecords & 1023) == 0)
		{
			TimestampTz now = GetCurrentTimestamp();

			if (TimestampDifferenceExceeds(last_report, now, 10000))
			{
				last_report = now;
				ereport(LOG,
						(errmsg("pg_fastckpt: log replay %.0f%% done, elapsed %.1f s",
								100.0 * (double) (rec->lsn - plan->start_lsn) /
								(double) Max(plan->end_lsn - plan->start_lsn, 1),
								(double) TimestampDifferenceMilliseconds(start, now) / 1000.0)));
			}
		}
	}
	fc_log_reader_close(reader);
	if (part != 0)
	{
		/* every partition sees every record: count them once */
		pass.counts.records_applied = 0;
		pass.counts.records_skipped = 0;
	}
	*counts = pass.counts;
}

/* The first CALL record of its database (a lower bound is enough). */
static void
fc_note_first_call(List **first_calls, const fc_log_header *rec)
{
	ListCell   *lc;
	FcSerialDb *db;

	foreach(lc, *first_calls)
	{
		db = (FcSerialDb *) lfirst(lc);
		if (db->dbid == rec->dbid)
		{
			db->first_call_csn = Min(db->first_call_csn, rec->csn);
			return;
		}
	}
	db = palloc0(sizeof(FcSerialDb));
	db->dbid = rec->dbid;
	db->first_call_csn = rec->csn;
	*first_calls = lappend(*first_calls, db);
}

static int
fc_serial_entry_cmp(const void *a, const void *b)
{
	const FcSerialEntry *x = (const FcSerialEntry *) a;
	const FcSerialEntry *y = (const FcSerialEntry *) b;

	if (x->csn != y->csn)
		return x->csn < y->csn ? -1 : 1;
	return (x->lsn > y->lsn) - (x->lsn < y->lsn);
}

/*
 * A second pass over the log: the VALUES and CALL records that count of
 * each database from its first call on, in CSN order.  A call must see
 * exactly the commits before it, and the log holds records a little out
 * of CSN order (CSNs are taken before the log space).
 */
static void
fc_collect_serial(const FcReplayPlan *plan, List *dbs)
{
	FcLogReader *reader = fc_log_reader_open(plan->start_lsn);
	const fc_log_header *rec;
	ListCell   *lc;
	uint64	   *cap = palloc0(list_length(dbs) * sizeof(uint64));

	while ((rec = fc_log_reader_next(reader)) != NULL && rec->lsn < plan->end_lsn)
	{
		int			i = 0;

		fc_worker_check_interrupts();
		if ((rec->kind != FC_REC_VALUES && rec->kind != FC_REC_CALL) ||
			rec->csn < plan->min_csn || !fc_replay_is_serial(plan, rec) ||
			!fc_replay_counts(plan, rec->csn))
			continue;
		foreach(lc, dbs)
		{
			FcSerialDb *db = (FcSerialDb *) lfirst(lc);

			if (db->dbid == rec->dbid)
			{
				if (db->nentries == cap[i])
				{
					cap[i] = Max(cap[i] * 2, 1024);
					db->entries = db->entries == NULL ?
						MemoryContextAllocHuge(TopMemoryContext, cap[i] * sizeof(FcSerialEntry)) :
						repalloc_huge(db->entries, cap[i] * sizeof(FcSerialEntry));
				}
				db->entries[db->nentries].csn = rec->csn;
				db->entries[db->nentries].lsn = rec->lsn;
				db->nentries++;
				break;
			}
			i++;
		}
	}
	fc_log_reader_close(reader);
	pfree(cap);
	foreach(lc, dbs)
	{
		FcSerialDb *db = (FcSerialDb *) lfirst(lc);

		if (db->nentries > 1)
			qsort(db->entries, db->nentries, sizeof(FcSerialEntry), fc_serial_entry_cmp);
	}
}

static void
fc_finish_table(FcTable *tbl, void *arg)
{
	fc_table_finish_replay(tbl);
}

static int
fc_csn_cmp(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return (x > y) - (x < y);
}

/*
 * Replay the log from start_lsn (a checkpoint's start, or the beginning),
 * applying the records with a CSN of at least min_csn: those below it are
 * in the checkpoint already.
 */
void
fc_replay_log(FcReplayResult *res, uint64 start_lsn, uint64 min_csn)
{
	HTAB	   *skip;
	HTAB	   *clog;
	List	   *ddl = NIL;
	ListCell   *lc;
	FcLogReader *reader;
	const fc_log_header *rec;
	uint64		max_csn = 0;
	FcReplayPlan *plan;
	HASH_SEQ_STATUS seq;
	FcXidEntry *e;
	uint64		nskip;
	List	   *first_calls = NIL;
	TimestampTz start = GetCurrentTimestamp();

	memset(res, 0, sizeof(FcReplayResult));
	skip = fc_xid_set_create("pg_fastckpt records that do not count");
	clog = fc_xid_set_create("pg_fastckpt commit status");

	fc_log_dir_ensure();
	res->start_lsn = start_lsn;

	/* the end, what does not count, the largest CSN, the DDL */
	reader = fc_log_reader_open(start_lsn);
	while ((rec = fc_log_reader_next(reader)) != NULL)
	{
		fc_worker_check_interrupts();
		res->records[rec->kind]++;
		if (rec->kind == FC_REC_ABORT)
		{
			(void) hash_search(skip, &rec->csn, HASH_ENTER, NULL);
			continue;
		}
		if (rec->csn > max_csn)
			max_csn = rec->csn;
		if (rec->csn < min_csn)
			continue;
		if (rec->kind == FC_REC_CALL)
		{
			fc_note_first_call(&first_calls, rec);
			res->max_call_csn = Max(res->max_call_csn, rec->csn);
		}
		if ((rec->flags & FC_REC_NEEDS_CLOG) && !fc_xid_committed(clog, rec->xid))
			(void) hash_search(skip, &rec->csn, HASH_ENTER, NULL);
		if (rec->kind == FC_REC_DDL)
		{
			fc_log_header *copy = palloc(rec->len);

			memcpy(copy, rec, rec->len);
			ddl = lappend(ddl, copy);
		}
	}
	res->end_lsn = fc_log_reader_end(reader);
	fc_log_reader_close(reader);
	ereport(LOG,
			(errmsg("pg_fastckpt: replaying the log from %llu to %llu (%llu bytes)",
					(unsigned long long) start_lsn, (unsigned long long) res->end_lsn,
					(unsigned long long) (res->end_lsn - start_lsn))));

	/* storages first, so that every row finds the storage it belongs to */
	foreach(lc, ddl)
	{
		rec = (const fc_log_header *) lfirst(lc);
		if (hash_search(skip, &rec->csn, HASH_FIND, NULL) != NULL)
		{
			res->records_skipped++;
			continue;
		}
		fc_replay_ddl(rec, res);
		res->records_applied++;
	}
	list_free_deep(ddl);

	/* the rows, in parallel, but those after a database's first call */
	nskip = hash_get_num_entries(skip);
	plan = fc_replay_plan_create(nskip + 2 * list_length(first_calls));
	plan->start_lsn = start_lsn;
	plan->end_lsn = res->end_lsn;
	plan->min_csn = min_csn;
	plan->phase = fc_pp_phase();
	plan->nskip = 0;
	hash_seq_init(&seq, skip);
	while ((e = hash_seq_search(&seq)) != NULL)
		FC_PLAN_SKIP(plan)[plan->nskip++] = e->key;
	qsort(FC_PLAN_SKIP(plan), plan->nskip, sizeof(uint64), fc_csn_cmp);
	foreach(lc, first_calls)
	{
		FcSerialDb *db = (FcSerialDb *) lfirst(lc);

		FC_PLAN_SERIAL(plan)[2 * plan->nserial] = db->dbid;
		FC_PLAN_SERIAL(plan)[2 * plan->nserial + 1] = db->first_call_csn;
		plan->nserial++;
	}
	if (first_calls != NIL)
		fc_collect_serial(plan, first_calls);
	res->serial = first_calls;
	hash_destroy(skip);
	hash_destroy(clog);

	res->workers = fc_replay_plan_run(plan);
	for (uint32 p = 0; p < plan->nparts; p++)
	{
		res->records_applied += plan->parts[p].records_applied;
		res->records_skipped += plan->parts[p].records_skipped;
		res->rows_applied += plan->parts[p].rows_applied;
		res->rows_skipped += plan->parts[p].rows_skipped;
	}
	fc_replay_plan_destroy(plan);

	fc_table_foreach(fc_finish_table, NULL);
	fc_log_truncate_at(res->end_lsn);
	res->next_csn = Max(max_csn + 1, min_csn);
	res->seconds = (double) TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()) / 1000.0;
}
