/*-------------------------------------------------------------------------
 *
 * commit.c
 *	  Logging and durability of a committing transaction (DESIGN.md
 *	  section 5).
 *
 * At PRE_COMMIT, under the install latch held shared: take the CSN, build
 * the transaction's record(s) -- DDL entries for the storages it created
 * or dropped, then the final image (or a tombstone) of every row it wrote
 * -- while installing the same images into the current shadow images, and
 * append them to the log.  Then wait for the log writer: right away in
 * strict mode, after PostgreSQL released the transaction's locks in early
 * lock release mode (Aether, section 3).
 *
 * A transaction that also wrote WAL (heap tables, catalogs), or whose
 * changes need more than one record, waits before PostgreSQL's commit
 * record, forces that record to disk, and flags its records so recovery
 * replays them only if PostgreSQL's commit log says the xid committed:
 * both sides are then all-or-nothing together.  Everything else is
 * atomic because it is one record, and an ABORT record voids it if the
 * transaction fails after appending it.
 *
 * A transaction that is one checked call of a registered routine
 * (procs/) is logged as one CALL record instead of its row images.
 *
 * A storage created in this transaction (CREATE TABLE, TRUNCATE, table
 * rewrites) is logged whole, whatever wrote it (COPY, rewrites that bypass
 * the write set).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "access/xloginsert.h"
#include "catalog/pg_control.h"
#include "miscadmin.h"
#include "replication/origin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "tcop/pquery.h"
#include "utils/portal.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "pg_fastckpt.h"
#include "ckpt/checkpoint.h"
#include "log/log.h"
#include "procs/procs.h"
#include "recovery/call_replay.h"
#include "recovery/gate.h"
#include "store/table_store.h"
#include "txn/prepared.h"
#include "txn/read_set.h"
#include "txn/write_set.h"

/*
 * A record being built.  Its buffer lives as long as the backend and is
 * grown, before the commit installs anything, to what the commit's
 * records may need (up to FC_LOG_MAX_RECORD): most sessions never write
 * more than a few kB at a commit.
 */
#define FC_RB_INITIAL_CAP		8192
typedef struct FcRecBuilder
{
	char	   *buf;
	uint32		cap;
	fc_log_header *hdr;
	uint64		end_lsn;		/* after the last record appended */
	int			nrecords;
} FcRecBuilder;

static FcRecBuilder fc_rb;
static uint64 fc_elr_wait_lsn = 0;	/* wait for this after locks are released */
static uint64 fc_logged_csn = 0;	/* records appended with this CSN */
static uint64 fc_abort_wait_lsn = 0;	/* durable before a rollback is reported */
static bool fc_ckpt_first = false;	/* changed what logged calls need */

static void fc_commit_log_abort(void);
static bool fc_statement_returns_nothing(void);
uint64		fc_read_wait_lsn = 0;

static void
fc_rb_begin(uint8 kind, uint8 flags, uint64 csn)
{
	Assert(fc_rb.buf != NULL);
	fc_rb.hdr = (fc_log_header *) fc_rb.buf;
	memset(fc_rb.hdr, 0, FC_LOG_HEADER_SIZE);
	fc_rb.hdr->len = FC_LOG_HEADER_SIZE;
	fc_rb.hdr->csn = csn;
	fc_rb.hdr->xid = U64FromFullTransactionId(GetTopFullTransactionIdIfAny());
	fc_rb.hdr->dbid = MyDatabaseId;
	fc_rb.hdr->kind = kind;
	fc_rb.hdr->flags = flags;
}

static void
fc_rb_emit(void)
{
	if (fc_logged_csn == 0)
		fc_log_set_voidable(GetTopTransactionIdIfAny(),
							fc_write_set_has_subxact_writes());
	fc_rb.end_lsn = fc_log_insert(fc_rb.buf, fc_rb.hdr->len);
	fc_rb.nrecords++;
	fc_logged_csn = fc_rb.hdr->csn;
}

/*
 * Make room for records of up to len bytes (FC_LOG_MAX_RECORD at most),
 * while an allocation failure can still abort the commit cleanly.
 */
static void
fc_rb_prepare(uint64 len)
{
	uint32		cap = fc_rb.cap;

	len = Min(len, (uint64) FC_LOG_MAX_RECORD);
	if (fc_rb.buf == NULL)
	{
		fc_rb.cap = Max(FC_RB_INITIAL_CAP, (uint32) len);
		fc_rb.buf = MemoryContextAlloc(TopMemoryContext, fc_rb.cap);
		return;
	}
	if (len <= cap)
		return;
	while (cap < len)
		cap = (uint32) Min((uint64) FC_LOG_MAX_RECORD, (uint64) cap * 2);
	fc_rb.buf = repalloc(fc_rb.buf, cap);
	fc_rb.cap = cap;
}

/*
 * Room for an entry of size bytes, emitting the record so far if needed:
 * only a commit whose records may not fit in one does (fc_rb_prepare).
 */
static char *
fc_rb_reserve(uint32 size)
{
	char	   *p;

	if (fc_rb.hdr->len + size > fc_rb.cap || fc_rb.hdr->nentries == PG_UINT16_MAX)
	{
		fc_log_header saved = *fc_rb.hdr;

		/* only flagged (multi-record) transactions get here */
		Assert(fc_rb.hdr->flags & FC_REC_NEEDS_CLOG);
		fc_rb_emit();
		fc_rb_begin(saved.kind, saved.flags, saved.csn);
		fc_rb.hdr->dbid = saved.dbid;
		fc_rb.hdr->xid = saved.xid;
	}
	p = fc_rb.buf + fc_rb.hdr->len;
	fc_rb.hdr->len += size;
	fc_rb.hdr->nentries++;
	return p;
}

static void
fc_rb_add_ddl(uint32 op, const RelFileNode *rnode, Oid relid, uint32 capacity)
{
	fc_log_ddl *d = (fc_log_ddl *) fc_rb_reserve(sizeof(fc_log_ddl));

	d->op = op;
	d->dbid = rnode->dbNode;
	d->spcid = rnode->spcNode;
	d->relnode = rnode->relNode;
	d->relid = relid;
	d->image_capacity = capacity;
}

/*
 * Install a slot's committed state into the current shadow image and log
 * it; the slot latch is taken here.  New storages log live rows only.
 */
static void
fc_rb_add_slot(FcTable *tbl, uint64 slotno, uint64 phase, bool new_storage)
{
	char	   *sp = fc_slot_ptr(tbl, slotno);
	FcSlotHeader *hdr = (FcSlotHeader *) sp;
	LWLock	   *lock = fc_slot_lock(tbl, slotno);
	bool		live;
	uint32		len;
	fc_log_row *row;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	live = fc_install_slot(tbl, slotno, phase);
	if (!live && new_storage)
	{
		LWLockRelease(lock);
		return;
	}
	len = live ? hdr->live_len : FC_LOG_TOMBSTONE;
	row = (fc_log_row *) fc_rb_reserve(fc_log_row_size(len));
	row->spcid = tbl->key.spcid;
	row->relnode = tbl->key.relnode;
	row->slotno = slotno;
	row->len = len;
	row->reserved = 0;
	if (live)
	{
		memcpy((char *) row + sizeof(fc_log_row), fc_pp_live(sp, &tbl->layout), len);
		memset((char *) row + sizeof(fc_log_row) + len, 0,
			   FC_LOG_ALIGNED(len) - len);
	}
	LWLockRelease(lock);
}

static uint64
fc_slot_entry_bound(FcTable *tbl)
{
	return sizeof(fc_log_row) + tbl->layout.image_capacity;
}

/* Does this write belong to a storage that is logged whole? */
static bool
fc_in_new_storage(FcTable *tbl, List *new_tables)
{
	ListCell   *lc;

	foreach(lc, new_tables)
		if (lfirst(lc) == tbl)
			return true;
	return false;
}

/* The log opens when startup recovery has replayed it. */
static void
fc_wait_log_ready(void)
{
	TimestampTz start = GetCurrentTimestamp();
	char		reason[256];

	while (!fc_log_is_ready())
	{
		long		waited = TimestampDifferenceMilliseconds(start, GetCurrentTimestamp());

		/* a failed recovery never opens the log: no use waiting */
		if (fc_gate_failed(reason, sizeof(reason)))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot commit changes to fastckpt tables: startup recovery could not restore them"),
					 errdetail("%s", reason),
					 errhint("The checkpoint files and the log under pg_fastckpt/ are kept as they are. "
							 "The server log says why recovery failed and what to do; then restart the server.")));
		if (waited >= fc_recovery_wait_timeout_ms)
			ereport(ERROR,
					(errcode(ERRCODE_CANNOT_CONNECT_NOW),
					 errmsg("cannot commit changes to fastckpt tables: recovery in progress"),
					 errdetail("Waited %ld ms for pg_fastckpt startup recovery to finish.", waited),
					 errhint("Retry shortly; progress is in the server log and in fastckpt_stat_recovery.")));
		pg_usleep(10000L);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * This transaction changes what the replay of logged calls depends on
 * (a registered routine, or storages): see fc_commit_checkpoint_for_calls.
 */
void
fc_commit_require_checkpoint(void)
{
	fc_ckpt_first = true;
}

/*
 * Wait for our records before PostgreSQL commits.  If the wait fails (a
 * cancel), the transaction aborts: void its records, and wait for that,
 * before the error reaches the client, who may take the error as the
 * rollback.  (Errors that PostgreSQL raises after our PRE_COMMIT callback
 * are voided in the abort callback, after the client has the error.)
 * FATAL exits without coming here; fc_commit_at_abort voids then.
 */
static void
fc_commit_wait_or_void(uint64 lsn)
{
	PG_TRY();
	{
		fc_log_wait_flushed(lsn, FC_LOG_WAIT_COMMIT);
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		fc_commit_log_abort();
		fc_log_wait_durable_quietly(fc_abort_wait_lsn);
		RESUME_INTERRUPTS();
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * Replay runs a logged call against the catalogs and storages of the
 * moment it replays, so a transaction that changes the catalogs
 * (catalog_watch.c) or drops a storage (DROP, TRUNCATE, table rewrites)
 * must not commit while the log after the last checkpoint still holds
 * calls: take a checkpoint first, and those calls are in it.  Calls that
 * commit meanwhile cannot touch the storages, which this transaction holds
 * locked, and fall back to row images while a catalog change is counted.
 * before_statement: for a statement whose changes commit inside it, before
 * it runs.
 */
void
fc_commit_checkpoint_for_calls(bool before_statement)
{
	char		closed_reason[1];
	Oid			closed_db;

	fc_ckpt_first = false;
	/* tables kept closed log no calls, and what replay needs can be fixed */
	if (fc_gate_failed(closed_reason, sizeof(closed_reason)))
		return;

	/*
	 * So in a database whose tables alone stay closed; but not a change of
	 * the catalogs all databases share (what the statement about to run
	 * changes is not known yet), while open databases' calls are in the
	 * log, which no checkpoint takes out meanwhile.
	 */
	if (fc_gate_database_closed(MyDatabaseId, NULL, 0))
	{
		if (!before_statement)
		{
			if (fc_catalog_watch_files_statement() || !fc_catalog_watch_shared_changes())
				return;
			/* a call that commits after this look falls back (h42 F3) */
			fc_catalog_watch_enter_at_commit();
		}
		if (!fc_gate_open_databases_have_calls())
			return;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot change catalogs shared by all databases while the fastckpt tables of database \"%s\" stay closed",
						fc_gate_database_label(MyDatabaseId)),
				 errdetail("Other databases' logged calls would replay against the changed roles, memberships or settings at the next start, "
						   "and pg_fastckpt takes no checkpoint while a database's tables stay closed."),
				 errhint("Change only this database's objects until its tables open; or drop it; or, as a last resort, restart the server "
						 "with pg_fastckpt.recovery_accept_call_mismatch on, which keeps what its calls write at replay, or skips them if they fail.")));
	}

	/*
	 * Startup recovery may yet replay calls against the catalogs: wait for
	 * it, bounded, since a recovery worker may need a lock we hold; not
	 * once it has read the log and found none (nor is a checkpoint due).
	 */
	if (!fc_gate_is_open())
	{
		if (fc_gate_no_calls_to_replay())
			return;
		fc_gate_wait_for("this change (startup recovery may replay logged calls against the catalogs)");
	}
	if (!fc_ckpt_calls_since_last())
		return;
	if (fc_gate_some_database_closed(&closed_db))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot change the catalogs while the fastckpt tables of database \"%s\" stay closed",
						fc_gate_database_label(closed_db)),
				 errdetail("Logged calls of registered routines would replay against the changed catalogs: pg_fastckpt takes a checkpoint before such a change commits, "
						   "and takes none while startup recovery has left a database's tables closed."),
				 errhint("Ask the administrator: the server log says which call could not be repeated. "
						 "Once that database's tables open (put back what the call needs and restart the server) or it is dropped, retry.")));
	ereport(DEBUG1,
			(errmsg("pg_fastckpt: taking a checkpoint before this commit: logged calls of registered routines precede it")));
	fc_ckpt_request(true);
}

/*
 * In a database whose tables stay closed, every commit and PREPARE is
 * checked for changes of the shared catalogs, which plain DML makes too
 * (no statement announces them).
 */
void
fc_commit_check_closed_database(void)
{
	if (unlikely(!fc_gate_passes()) && fc_gate_is_open())
		fc_commit_checkpoint_for_calls(false);
}

/*
 * Put a WAL record carrying our xid: replay moves the next xid past it.  A
 * no-op record, which logical decoding shows to no one (a logical message
 * would reach every consumer of the changes).
 */
static void
fc_log_xid_in_wal(void)
{
	char		unused = 0;

	XLogBeginInsert();
	XLogRegisterData(&unused, sizeof(unused));
	(void) XLogInsert(RM_XLOG_ID, XLOG_NOOP);
}

/*
 * The xid of this transaction is never handed out again after a crash,
 * and recovery may ask PostgreSQL's commit log about it.
 */
void
fc_commit_make_xid_durable(void)
{
	(void) GetTopTransactionId();
	fc_log_xid_in_wal();
	XLogFlush(XactLastRecEnd);
}

/*
 * COMMIT PREPARED of a transaction that wrote fastckpt rows (prepared.c):
 * as a commit that also wrote WAL, under the prepared transaction's xid,
 * before PostgreSQL's commit record.  Its xid is durable (the PREPARE
 * record), and its commit record is always flushed.
 */
void
fc_commit_log_prepared(const FcPreparedRef *refs, int nrefs, uint64 fxid,
					   TransactionId xid, uint64 *installed_phase)
{
	uint64		estimate = FC_LOG_HEADER_SIZE;
	uint64		claim = FC_LOG_HEADER_SIZE;
	uint64		csn;
	uint64		phase;

	fc_wait_log_ready();
	for (int i = 0; i < nrefs; i++)
	{
		estimate += fc_slot_entry_bound(refs[i].tbl);
		claim += refs[i].op == FC_PREP_DELETE ?
			fc_log_row_size(FC_LOG_TOMBSTONE) : fc_slot_entry_bound(refs[i].tbl);
	}
	fc_log_space_claim(claim);
	fc_rb_prepare(estimate);

	fc_rb.nrecords = 0;
	LWLockAcquire(fc_misc_lock(FC_LOCK_INSTALL), LW_SHARED);
	phase = fc_pp_phase();
	csn = fc_log_next_csn();
	fc_ckpt_publish_csn(csn, xid);
	fc_rb_begin(FC_REC_VALUES, FC_REC_NEEDS_CLOG, csn);
	fc_rb.hdr->xid = fxid;
	*installed_phase = phase;
	for (int i = 0; i < nrefs; i++)
		fc_rb_add_slot(refs[i].tbl, refs[i].slotno, phase, false);
	if (fc_rb.hdr->nentries > 0)
		fc_rb_emit();
	for (int i = 0; i < nrefs; i++)
	{
		FcSlotHeader *hdr = fc_slot_header(refs[i].tbl, refs[i].slotno);

		if (hdr->flags & FC_SLOT_USED)
			hdr->link = fc_rb.end_lsn;
	}
	LWLockRelease(fc_misc_lock(FC_LOCK_INSTALL));
	fc_log_space_release();
	if (fc_rb.nrecords > 0)
		fc_commit_wait_or_void(fc_rb.end_lsn);
}

void
fc_commit_pre_commit(void)
{
	int			nwrites = fc_write_set_size();
	List	   *changes;
	List	   *new_tables = NIL;
	ListCell   *lc;
	uint64		estimate = FC_LOG_HEADER_SIZE;
	uint64		claim;			/* the estimate, deletions as tombstones */
	uint64		entries = 0;
	bool		needs_clog;
	uint64		csn;
	uint64		phase;
	FcTable    *prev_tbl = NULL;
	uint64		prev_slot = 0;
	int			verdict;

	fc_elr_wait_lsn = 0;
	/* a writer's reads are covered by its own, later record (see below) */
	if (nwrites == 0)
		fc_commit_wait_reads();
	if (fc_ckpt_first || (fc_pending_drops_exist() && !fc_in_recovery_worker))
		fc_commit_checkpoint_for_calls(false);
	else
		fc_commit_check_closed_database();
	if (nwrites == 0 && !fc_pending_changes_exist())
	{
		fc_note_session_sequences();
		return;
	}
	if (fc_in_recovery_worker)
	{
		/* replaying the log: install only, the records are there already */
		phase = fc_pp_phase();
		LWLockAcquire(fc_misc_lock(FC_LOCK_INSTALL), LW_SHARED);
		if (fc_replaying_call)
		{
			/* a replayed call: digest what it wrote, as its record did */
			fc_replayed_digest = fc_write_set_install_digest(phase, &fc_replayed_nwritten);
			nwrites = 0;
		}
		for (int i = 0; i < nwrites; i++)
		{
			FcWrite    *w = fc_write_set_get(i);
			LWLock	   *lock;

			if (w->tbl->generation != w->generation)
				continue;
			lock = fc_slot_lock(w->tbl, w->slotno);
			LWLockAcquire(lock, LW_EXCLUSIVE);
			fc_install_slot(w->tbl, w->slotno, phase);
			LWLockRelease(lock);
		}
		LWLockRelease(fc_misc_lock(FC_LOCK_INSTALL));
		fc_count_live_rows();
		fc_write_set_installed(phase);
		return;
	}

	/*
	 * Temporary tables end with their session, so nothing brings their rows
	 * back after a crash: they are neither logged nor waited for.
	 */
	changes = fc_pending_storage_changes();
	if (changes == NIL && !fc_write_set_has_logged_writes())
	{
		fc_count_live_rows();
		/* a call that wrote only temporary rows still counts, as a fallback */
		if (nwrites > 0 && (verdict = fc_call_verdict_at_commit(false)) >= 0)
			fc_call_count((FcFallback) verdict);
		fc_commit_wait_reads();
		return;
	}
	fc_wait_log_ready();

	/* storages created here are logged whole; size everything up */
	foreach(lc, changes)
	{
		bool		is_drop;
		const RelFileNode *rnode = fc_pending_change_rnode(lfirst(lc), &is_drop);
		FcTable    *tbl;

		estimate += sizeof(fc_log_ddl);
		entries++;
		if (is_drop || (tbl = fc_table_lookup(rnode)) == NULL)
			continue;
		new_tables = lappend(new_tables, tbl);
		estimate += fc_table_nslots(tbl) * fc_slot_entry_bound(tbl);
		entries += fc_table_nslots(tbl);
	}
	claim = estimate;
	for (int i = 0; i < nwrites; i++)
	{
		FcWrite    *w = fc_write_set_get(i);

		if (!fc_write_is_logged(w))
			continue;
		estimate += fc_slot_entry_bound(w->tbl);
		/* a slot deleted at commit is logged as a tombstone */
		claim += w->op == FC_OP_DELETE ?
			fc_log_row_size(FC_LOG_TOMBSTONE) : fc_slot_entry_bound(w->tbl);
		entries++;
	}

	/*
	 * Anything that WAL-logged (or is too big for one record) goes by
	 * PostgreSQL's commit record; make that record durable too.  So does a
	 * transaction of a replication origin (a logical replication apply
	 * worker): its commit record carries how far the origin got, which
	 * must not fall behind rows that survive a crash, or they are applied
	 * twice.
	 */
	needs_clog = (changes != NIL || XactLastRecEnd != InvalidXLogRecPtr ||
				  replorigin_session_origin != InvalidRepOriginId ||
				  estimate > FC_LOG_MAX_RECORD || entries >= PG_UINT16_MAX);
	verdict = fc_call_verdict_at_commit(changes != NIL);

	/* with the log device full, fail now, while nothing is logged */
	if (verdict == FC_FALLBACK_NONE)
		claim += FC_LOG_HEADER_SIZE + fc_call_record_size();
	fc_log_space_claim(claim);
	/* the verdict may still become a fallback to row images */
	fc_rb_prepare(Max(estimate, verdict == FC_FALLBACK_NONE ?
					  (uint64) fc_call_record_size() : 0));

	if (needs_clog)
	{
		/*
		 * Recovery asks PostgreSQL whether this xid committed, so the xid
		 * must never be handed out again after a crash: put a WAL record
		 * carrying it on disk first (xids of transactions that wrote no
		 * WAL are not remembered across a crash).  And the commit record
		 * itself must be durable before the client hears of it.
		 */
		(void) GetTopTransactionId();
		fc_log_xid_in_wal();
		XLogFlush(XactLastRecEnd);
		ForceSyncCommit();
	}
	else
		fc_flush_used_sequences();

	/* before the CSN: a call committing after us sees us as a writer */
	fc_count_live_rows();

	fc_rb.nrecords = 0;
	LWLockAcquire(fc_misc_lock(FC_LOCK_INSTALL), LW_SHARED);
	phase = fc_pp_phase();
	csn = fc_log_next_csn();
	fc_ckpt_publish_csn(csn, needs_clog ? GetTopTransactionId() : InvalidTransactionId);

	/*
	 * A call's reads are validated only now: every transaction with a
	 * smaller CSN has done its writes (read_set.c).
	 */
	if (verdict == FC_FALLBACK_NONE && !fc_read_set_validate())
		verdict = FC_FALLBACK_READ_CONFLICT;
	if (verdict == FC_FALLBACK_NONE)
	{
		/* published before looking for catalog changes (catalog_watch.c) */
		fc_gate_note_call_db(MyDatabaseId);
		fc_ckpt_note_call(csn);
		if (!fc_call_catalog_unchanged())
			verdict = FC_FALLBACK_CATALOG_CHANGED;
	}

	if (changes != NIL)
	{
		fc_rb_begin(FC_REC_DDL, FC_REC_NEEDS_CLOG, csn);
		foreach(lc, changes)
		{
			bool		is_drop;
			const RelFileNode *rnode = fc_pending_change_rnode(lfirst(lc), &is_drop);
			FcTable    *tbl;

			if (!OidIsValid(rnode->relNode))
				fc_rb_add_ddl(FC_DDL_DROP_DATABASE, rnode, InvalidOid, 0);
			else if (is_drop)
				fc_rb_add_ddl(FC_DDL_DROP, rnode, InvalidOid, 0);
			else if ((tbl = fc_table_lookup(rnode)) != NULL)
			{
				fc_rb_add_ddl(FC_DDL_CREATE, rnode, tbl->relid,
							  tbl->layout.image_capacity);
				tbl->create_csn = csn;
			}
		}
		fc_rb_emit();
	}

	if (verdict == FC_FALLBACK_NONE)
	{
		/* one CALL record: the call, its slots, and a digest of its writes */
		uint32		nwritten;
		uint64		digest;

		fc_rb_begin(FC_REC_CALL, needs_clog ? FC_REC_NEEDS_CLOG : 0, csn);
		digest = fc_write_set_install_digest(phase, &nwritten);
		fc_call_fill_record(fc_rb.hdr, digest, nwritten);
		fc_rb_emit();
	}
	else
	{
		fc_rb_begin(FC_REC_VALUES, needs_clog ? FC_REC_NEEDS_CLOG : 0, csn);
		for (int i = 0; i < nwrites; i++)
		{
			FcWrite    *w = fc_write_set_get(i);

			if (!fc_write_is_logged(w) ||
				(w->tbl == prev_tbl && w->slotno == prev_slot) ||
				fc_in_new_storage(w->tbl, new_tables))
				continue;
			fc_rb_add_slot(w->tbl, w->slotno, phase, false);
			prev_tbl = w->tbl;
			prev_slot = w->slotno;
		}
		foreach(lc, new_tables)
		{
			FcTable    *tbl = (FcTable *) lfirst(lc);
			uint64		nslots = fc_table_nslots(tbl);

			/*
			 * A record's rows belong to the database its header names; a
			 * CREATE DATABASE fills storages of another one.
			 */
			if (tbl->key.dbid != fc_rb.hdr->dbid)
			{
				Assert(needs_clog);
				if (fc_rb.hdr->nentries > 0)
					fc_rb_emit();
				fc_rb_begin(FC_REC_VALUES, FC_REC_NEEDS_CLOG, csn);
				fc_rb.hdr->dbid = tbl->key.dbid;
			}
			for (uint64 s = 0; s < nslots; s++)
				fc_rb_add_slot(tbl, s, phase, true);
		}
		if (fc_rb.hdr->nentries > 0)
			fc_rb_emit();
	}

	/* stamp the rows with their record, for readers (see fc_note_read_stamp) */
	for (int i = 0; i < nwrites; i++)
	{
		FcWrite    *w = fc_write_set_get(i);
		FcSlotHeader *hdr;

		if (!fc_write_is_logged(w))
			continue;
		hdr = fc_slot_header(w->tbl, w->slotno);
		if (hdr->flags & FC_SLOT_USED)
			hdr->link = fc_rb.end_lsn;
	}
	LWLockRelease(fc_misc_lock(FC_LOCK_INSTALL));
	fc_log_space_release();
	fc_write_set_installed(phase);
	list_free(new_tables);
	list_free(changes);
	if (verdict >= 0)
		fc_call_count((FcFallback) verdict);

	if (fc_rb.nrecords == 0)
	{
		/* nothing left to log (its tables went away): still wait for reads */
		fc_commit_wait_reads();
		return;
	}
	if (needs_clog)
		fc_commit_wait_or_void(fc_rb.end_lsn);
	else if (fc_test_commit_no_wait)
		return;
	else if (fc_commit_mode == FC_COMMIT_STRICT)
		fc_commit_wait_or_void(fc_rb.end_lsn);
	else
		fc_elr_wait_lsn = fc_rb.end_lsn;
}

/*
 * Early lock release: the transaction is committed and its locks are gone;
 * only now wait for the log, so that transactions queued behind our row
 * locks join the same flush.  The client hears of the commit only after.
 */
static void
fc_commit_release_callback(ResourceReleasePhase phase, bool isCommit,
						   bool isTopLevel, void *arg)
{
	uint64		lsn;

	if (phase != RESOURCE_RELEASE_AFTER_LOCKS || !isTopLevel)
		return;
	if (!isCommit)
	{
		/*
		 * The client hears of the rollback (libpq reports the error once
		 * the abort is done) only when a crash can no longer bring the
		 * transaction back.  A process that is exiting tells its client
		 * nothing either way.
		 */
		lsn = fc_abort_wait_lsn;
		fc_abort_wait_lsn = 0;
		if (lsn != 0 && !proc_exit_inprogress)
			fc_log_wait_durable_quietly(lsn);
		return;
	}
	lsn = fc_elr_wait_lsn;
	if (lsn == 0)
		return;
	fc_elr_wait_lsn = 0;
	fc_log_wait_flushed(lsn, FC_LOG_WAIT_AFTER_COMMIT);
}

void
fc_commit_at_end(void)
{
	fc_ckpt_first = false;
	fc_log_space_release();
	if (fc_logged_csn != 0)
		fc_log_clear_voidable();
	fc_logged_csn = 0;
	fc_read_wait_lsn = 0;
	fc_client_output_disarm();
}

/* Append the ABORT record voiding our records, if any (see below). */
static void
fc_commit_log_abort(void)
{
	fc_log_header rec;

	if (fc_logged_csn == 0)
		return;
	memset(&rec, 0, sizeof(rec));
	rec.len = FC_LOG_HEADER_SIZE;
	rec.csn = fc_logged_csn;
	rec.xid = U64FromFullTransactionId(GetTopFullTransactionIdIfAny());
	rec.dbid = MyDatabaseId;
	rec.kind = FC_REC_ABORT;
	fc_abort_wait_lsn = fc_log_insert(&rec, rec.len);
	fc_log_clear_voidable();
	fc_logged_csn = 0;
}

/*
 * Void the records of a transaction that failed after appending them.  The
 * ABORT record names them by CSN: CSNs are never reused, while PostgreSQL
 * may hand out an xid again after a crash.
 *
 * This runs before the rows are rolled back and the row locks released,
 * and until the ABORT record is reserved our rows look busy to others
 * (fc_log_set_voidable), so any record of a transaction that reads or
 * writes the old values lies after the ABORT record, and a durable log
 * holding it holds the ABORT too.  That holds even when this process is
 * exiting (FATAL in the commit wait, the postmaster's death): other
 * sessions and the log writer may go on committing and flushing meanwhile.
 * If the postmaster is gone and the ring is full, the insert exits the
 * process with its space reserved but never filled, and nothing after it
 * can be flushed.
 *
 * The ABORT record is waited for once the rows are rolled back and the
 * locks released (fc_commit_release_callback).
 */
void
fc_commit_at_abort(void)
{
	fc_ckpt_first = false;
	fc_elr_wait_lsn = 0;
	fc_log_space_release();
	fc_commit_log_abort();
	/* a rollback is reported only once the rows it returned are durable */
	fc_abort_wait_lsn = Max(fc_abort_wait_lsn, fc_read_wait_lsn);
	fc_read_wait_lsn = 0;
	fc_client_output_disarm();
}

/*
 * A row version committed by someone else is about to be returned; if its
 * record may not be durable yet (early lock release), remember to wait
 * before handing it over.  Called with the slot latch held, so no waiting
 * here.
 */
void
fc_note_read_stamp(uint64 stamp)
{
	/* durable positions only grow: ask shared memory only past our copy */
	static uint64 known_flushed = 0;

	if (likely(stamp <= known_flushed) || stamp <= fc_read_wait_lsn ||
		fc_test_commit_no_wait)
		return;
	known_flushed = fc_log_flushed_lsn();
	if (stamp > known_flushed)
		fc_read_wait_lsn = stamp;
}

/*
 * Nothing read of a commit whose record is not durable yet reaches the
 * client before that record is durable.
 */
void
fc_wait_read_durable_slow(void)
{
	/*
	 * The wait may be put off to the commit when nothing read reaches the
	 * client before it: a statement that returns no rows, or one outside a
	 * transaction block of a transaction that wrote fastckpt rows (it
	 * commits with a later record, and its rows are sent after its commit).
	 * The position is then kept, not cleared: a savepoint rollback may yet
	 * leave the transaction without writes, and its commit (or rollback,
	 * fc_commit_at_abort) waits for it.
	 */
	if (fc_write_set_size() > 0 && !IsTransactionBlock())
	{
		/* what leaves before the commit (notices, errors, a full buffer) */
		fc_client_output_guard(true);
		return;
	}
	if (fc_statement_returns_nothing())
	{
		/* no rows, but a trigger's NOTICE or an error may quote them */
		fc_client_output_guard(false);
		return;
	}
	fc_commit_wait_reads();
}

/*
 * A data-modifying statement without RETURNING (an UPDATE reading the row
 * it will change) sends no rows to its client: the read can be made
 * durable at commit, where the transaction has either written (and waits
 * for a later position) or waits for this one.  A statement inside a
 * function counts as the statement that called it.
 */
static bool
fc_statement_returns_nothing(void)
{
	PlannedStmt *stmt;

	if (ActivePortal == NULL || ActivePortal->strategy != PORTAL_MULTI_QUERY ||
		list_length(ActivePortal->stmts) != 1)
		return false;
	stmt = linitial_node(PlannedStmt, ActivePortal->stmts);
	return (stmt->commandType == CMD_UPDATE ||
			stmt->commandType == CMD_DELETE ||
			stmt->commandType == CMD_INSERT ||
			stmt->commandType == CMD_MERGE) && !stmt->hasReturning;
}

/*
 * Wait now for what the transaction has read (the put-off position, if
 * any).  Also before PREPARE TRANSACTION, which acknowledges like a commit
 * (one that wrote fastckpt rows cannot prepare).
 */
void
fc_commit_wait_reads(void)
{
	uint64		lsn = fc_read_wait_lsn;

	if (lsn == 0)
		return;
	fc_read_wait_lsn = 0;
	fc_log_wait_flushed(lsn, FC_LOG_WAIT_READ);
}

void
fc_commit_register_callbacks(void)
{
	RegisterResourceReleaseCallback(fc_commit_release_callback, NULL);
}
