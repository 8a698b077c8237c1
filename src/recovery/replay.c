/*-------------------------------------------------------------------------
 *
 * replay.c
 *	  Rebuild the store from the logical log at startup.
 *
 * Two passes over the log.  The first finds where it ends (the first
 * record that does not validate: the torn tail of a crash), the aborted
 * transactions (by CSN: PostgreSQL may reuse an xid after a crash, a CSN
 * is never reused) and the largest CSN.  The second applies, in log order,
 * DDL records (storages created, dropped) and VALUES records (row images
 * and tombstones) of every transaction that counts: not aborted, and for
 * records flagged so, committed according to PostgreSQL's commit log.  A
 * row is written into the very slot it had, so index entries rebuilt from
 * the table match; per slot the largest CSN wins (SiloR, section 6.3),
 * which the slot's link word tracks while recovery runs.
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
#include "utils/timestamp.h"

#include "pg_fastckpt.h"
#include "log/log.h"
#include "recovery/gate.h"
#include "recovery/replay.h"
#include "store/table_store.h"
#include "txn/write_set.h"

/* A set of xids (commit status) or CSNs (aborted) */
typedef struct FcXidEntry
{
	uint64		key;
	bool		committed;
} FcXidEntry;

typedef struct FcReplayState
{
	HTAB	   *aborted;
	HTAB	   *clog;
	uint64		phase;
	FcReplayResult *res;
	/* last table looked up, rows of one record mostly share it */
	Oid			last_dbid;
	Oid			last_spcid;
	Oid			last_relnode;
	FcTable    *last_tbl;
} FcReplayState;

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
fc_xid_committed(FcReplayState *st, uint64 fxid_u64)
{
	FcXidEntry *e;
	bool		found;
	FullTransactionId fxid = FullTransactionIdFromU64(fxid_u64);
	TransactionId xid = XidFromFullTransactionId(fxid);

	e = hash_search(st->clog, &fxid_u64, HASH_ENTER, &found);
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

static FcTable *
fc_replay_table(FcReplayState *st, Oid dbid, Oid spcid, Oid relnode)
{
	RelFileNode rnode;

	if (st->last_tbl != NULL && st->last_dbid == dbid &&
		st->last_spcid == spcid && st->last_relnode == relnode)
		return st->last_tbl;
	rnode.dbNode = dbid;
	rnode.spcNode = spcid;
	rnode.relNode = relnode;
	st->last_tbl = fc_table_lookup(&rnode);
	st->last_dbid = dbid;
	st->last_spcid = spcid;
	st->last_relnode = relnode;
	return st->last_tbl;
}

static void
fc_replay_ddl(FcReplayState *st, const fc_log_header *rec)
{
	fc_log_cursor cur;
	const fc_log_ddl *d;

	st->last_tbl = NULL;
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
				fc_table_create(&rnode, d->relid, d->image_capacity)->create_csn = rec->csn;
				st->res->tables_created++;
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

static void
fc_replay_row(FcReplayState *st, const fc_log_header *rec,
			  const fc_log_row *row, const char *image)
{
	FcTable    *tbl = fc_replay_table(st, rec->dbid, row->spcid, row->relnode);
	char	   *sp;
	FcSlotHeader *hdr;

	if (tbl == NULL)
	{
		/* its storage was dropped later (or never reached the log) */
		st->res->rows_skipped++;
		return;
	}
	if (row->len == FC_LOG_TOMBSTONE)
	{
		if (row->slotno >= fc_table_nslots(tbl))
			return;
		sp = fc_slot_ptr(tbl, row->slotno);
		hdr = (FcSlotHeader *) sp;
		if (hdr->link > rec->csn)
			return;
		hdr->flags = 0;
		hdr->link = rec->csn;
		fc_pp_install_tombstone(&hdr->marks, st->phase);
		st->res->rows_applied++;
		return;
	}
	if (row->len > tbl->layout.image_capacity)
	{
		ereport(WARNING,
				(errmsg("pg_fastckpt: log record at %llu holds a %u-byte row for a table whose rows hold at most %u bytes; row skipped",
						(unsigned long long) rec->lsn, row->len, tbl->layout.image_capacity)));
		st->res->rows_skipped++;
		return;
	}
	fc_slot_claim(tbl, row->slotno, tbl->relid);
	sp = fc_slot_ptr(tbl, row->slotno);
	hdr = (FcSlotHeader *) sp;
	if (hdr->link > rec->csn)
		return;
	fc_slot_set_new_row(tbl, sp, image, row->len, FrozenTransactionId, FirstCommandId);
	ItemPointerSetInvalid(&hdr->next_tid);
	hdr->flags = FC_SLOT_USED | FC_XMIN_COMMITTED | FC_XMIN_FROZEN;
	hdr->link = rec->csn;
	fc_pp_install(&hdr->marks, sp, &tbl->layout, st->phase,
				  fc_pp_live(sp, &tbl->layout), row->len);
	st->res->rows_applied++;
}

static void
fc_replay_values(FcReplayState *st, const fc_log_header *rec)
{
	fc_log_cursor cur;
	const fc_log_row *row;
	const char *image;

	fc_log_cursor_init(&cur, rec);
	while (fc_log_next_row(&cur, &row, &image))
		fc_replay_row(st, rec, row, image);
	if (cur.corrupt)
		ereport(WARNING,
				(errmsg("pg_fastckpt: log record at %llu has malformed entries",
						(unsigned long long) rec->lsn)));
}

static void
fc_finish_table(FcTable *tbl, void *arg)
{
	fc_table_finish_replay(tbl);
}

/*
 * Replay the log from start_lsn (a checkpoint's start, or the beginning),
 * applying the records with a CSN of at least min_csn: those below it are
 * in the checkpoint already.
 */
void
fc_replay_log(FcReplayResult *res, uint64 start_lsn, uint64 min_csn)
{
	FcReplayState st;
	FcLogReader *reader;
	const fc_log_header *rec;
	uint64		first;
	uint64		max_csn = 0;
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz last_report = start;

	memset(res, 0, sizeof(FcReplayResult));
	memset(&st, 0, sizeof(st));
	st.res = res;
	st.aborted = fc_xid_set_create("pg_fastckpt aborted transactions");
	st.clog = fc_xid_set_create("pg_fastckpt commit status");
	st.phase = fc_pp_phase();

	fc_log_dir_ensure();
	first = start_lsn;
	res->start_lsn = first;

	/* pass 1: the end, the aborted transactions, the largest CSN */
	reader = fc_log_reader_open(first);
	while ((rec = fc_log_reader_next(reader)) != NULL)
	{
		res->records[rec->kind]++;
		if (rec->kind == FC_REC_ABORT)
			(void) hash_search(st.aborted, &rec->csn, HASH_ENTER, NULL);
		else if (rec->csn > max_csn)
			max_csn = rec->csn;
	}
	res->end_lsn = fc_log_reader_end(reader);
	fc_log_reader_close(reader);
	ereport(LOG,
			(errmsg("pg_fastckpt: replaying the log from %llu to %llu (%llu bytes)",
					(unsigned long long) first, (unsigned long long) res->end_lsn,
					(unsigned long long) (res->end_lsn - first))));

	/* pass 2: apply */
	reader = fc_log_reader_open(first);
	while ((rec = fc_log_reader_next(reader)) != NULL)
	{
		TimestampTz now;

		CHECK_FOR_INTERRUPTS();
		if ((rec->kind != FC_REC_DDL && rec->kind != FC_REC_VALUES) || rec->csn < min_csn)
			continue;
		if (hash_search(st.aborted, &rec->csn, HASH_FIND, NULL) != NULL ||
			((rec->flags & FC_REC_NEEDS_CLOG) && !fc_xid_committed(&st, rec->xid)))
		{
			res->records_skipped++;
			continue;
		}
		if (rec->kind == FC_REC_DDL)
			fc_replay_ddl(&st, rec);
		else
			fc_replay_values(&st, rec);
		res->records_applied++;

		if ((res->records_applied & 1023) == 0 &&
			TimestampDifferenceExceeds(last_report, now = GetCurrentTimestamp(), 10000))
		{
			last_report = now;
			ereport(LOG,
					(errmsg("pg_fastckpt: log replay %.0f%% done, elapsed %.1f s",
							100.0 * (double) (fc_log_reader_end(reader) - first) /
							(double) Max(res->end_lsn - first, 1),
							(double) TimestampDifferenceMilliseconds(start, now) / 1000.0)));
		}
	}
	fc_log_reader_close(reader);
	fc_table_foreach(fc_finish_table, NULL);

	fc_log_truncate_at(res->end_lsn);
	res->next_csn = Max(max_csn + 1, min_csn);
	res->seconds = (double) TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()) / 1000.0;
	hash_destroy(st.aborted);
	hash_destroy(st.clog);
}
