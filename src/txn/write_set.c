/*-------------------------------------------------------------------------
 *
 * write_set.c
 *	  Per-transaction write set; commit install and abort rollback.
 *
 * At PRE_COMMIT every written row's final image is copied into the
 * current Ping-Pong shadow image of its slot and marked dirty (or a
 * tombstone), under the shared install latch that the checkpoint phase
 * swap takes exclusively.  On abort, in-place updates are rolled back from
 * undo and other writes are marked dead, newest first, so savepoint
 * rollback restores exactly the prior state.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"

#include "pg_fastckpt.h"
#include "access/fastckpt_am.h"
#include "core/crc32c.h"
#include "ckpt/checkpoint.h"
#include "procs/procs.h"
#include "store/table_store.h"
#include "store/undo.h"
#include "txn/prepared.h"
#include "txn/write_set.h"

static FcWrite *fc_writes = NULL;
static int	fc_nwrites = 0;
static int	fc_writes_cap = 0;
static bool fc_installed = false;	/* shadow images got this xact's rows */
static uint64 fc_install_phase = 0; /* ... in this phase */

uint64
fc_pp_phase(void)
{
	return fc_pp_read_phase(fc_pp_phase_ptr());
}

void
fc_write_set_add(FcTable *tbl, uint64 slotno, FcWriteOp op, TransactionId xid,
				 TransactionId replaced_xmin)
{
	FcWrite    *w;

	if (fc_nwrites == fc_writes_cap)
	{
		int			newcap = Max(64, fc_writes_cap * 2);

		if (fc_writes == NULL)
			fc_writes = MemoryContextAlloc(TopMemoryContext, newcap * sizeof(FcWrite));
		else
			fc_writes = repalloc(fc_writes, newcap * sizeof(FcWrite));
		fc_writes_cap = newcap;
	}
	if (unlikely(fc_call_finished))
		fc_call_taint(FC_FALLBACK_WRITES_OUTSIDE_CALL);
	w = &fc_writes[fc_nwrites++];
	w->tbl = tbl;
	w->generation = tbl->generation;
	w->slotno = slotno;
	w->xid = xid;
	w->replaced_xmin = replaced_xmin;
	w->nestlevel = GetCurrentTransactionNestLevel();
	w->op = op;
}

/*
 * A super-deleted speculative insertion (ON CONFLICT found a conflict) is
 * dead to everyone at once and VACUUM may hand its slot to another
 * transaction before we commit: drop it from the write set, or our commit
 * would install and log whatever that transaction put there.
 */
void
fc_write_set_forget_insert(FcTable *tbl, uint64 slotno)
{
	for (int i = fc_nwrites - 1; i >= 0; i--)
	{
		FcWrite    *w = &fc_writes[i];

		if (w->tbl == tbl && w->slotno == slotno && w->op == FC_OP_INSERT)
		{
			memmove(w, w + 1, (fc_nwrites - i - 1) * sizeof(FcWrite));
			fc_nwrites--;
			return;
		}
	}
	elog(ERROR, "speculative insertion into slot " UINT64_FORMAT " of a fastckpt table is not in the write set",
		 slotno);
}

/* Did a subtransaction (committed into ours) write any of our rows? */
bool
fc_write_set_has_subxact_writes(void)
{
	TransactionId top = GetTopTransactionIdIfAny();

	for (int i = 0; i < fc_nwrites; i++)
		if (fc_writes[i].xid != top)
			return true;
	return false;
}

/* Did the transaction write a table that is logged (not a temporary one)? */
bool
fc_write_set_has_logged_writes(void)
{
	for (int i = 0; i < fc_nwrites; i++)
		if (fc_write_is_logged(&fc_writes[i]))
			return true;
	return false;
}

int
fc_write_set_size(void)
{
	return fc_nwrites;
}

FcWrite *
fc_write_set_get(int i)
{
	Assert(i >= 0 && i < fc_nwrites);
	return &fc_writes[i];
}

/*
 * Copy a slot's committed state into the current shadow image: its live
 * image, or a tombstone.  Returns true for a live image.
 */
bool
fc_install_slot(FcTable *tbl, uint64 slotno, uint64 phase)
{
	uint64		page;
	char	   *sp = fc_slot_locate(tbl, slotno, &page);
	FcSlotHeader *hdr = (FcSlotHeader *) sp;

	if (!(hdr->flags & FC_SLOT_USED))
		return false;
	if ((TransactionIdIsValid(hdr->xmax) && !(hdr->flags & FC_XMAX_ABORTED)) ||
		(hdr->flags & FC_XMIN_ABORTED))
	{
		fc_slot_install_tombstone(tbl, sp, page, phase);
		return false;
	}
	fc_slot_install_live(tbl, sp, page, phase);
	return true;
}

/* One slot's committed state, hashed the same way whoever wrote it. */
static uint32
fc_slot_state_hash(FcTable *tbl, uint64 slotno, bool live)
{
	uint32		crc = FC_CRC32C_INIT;
	uint64		key[2];

	key[0] = tbl->key.relnode;
	key[1] = slotno;
	crc = fc_crc32c_update(crc, key, sizeof(key));
	if (live)
	{
		FcSlotHeader *hdr = fc_slot_header(tbl, slotno);
		HeapTupleHeader td = (HeapTupleHeader) fc_pp_live((char *) hdr, &tbl->layout);
		uint32		shape[3];

		/*
		 * Only what the row says: the header's transaction fields are
		 * whatever the executor's tuple happened to carry.
		 */
		shape[0] = HeapTupleHeaderGetNatts(td);
		shape[1] = td->t_infomask & (HEAP_HASNULL | HEAP_HASVARWIDTH | HEAP_HASEXTERNAL);
		shape[2] = td->t_hoff;
		crc = fc_crc32c_update(crc, shape, sizeof(shape));
		if (hdr->live_len > offsetof(HeapTupleHeaderData, t_bits))
			crc = fc_crc32c_update(crc, td->t_bits,
								   hdr->live_len - offsetof(HeapTupleHeaderData, t_bits));
	}
	return fc_crc32c_final(crc);
}

static int
fc_write_key_cmp(const void *a, const void *b)
{
	const FcWrite *x = *(FcWrite *const *) a;
	const FcWrite *y = *(FcWrite *const *) b;

	if (x->tbl->key.relnode != y->tbl->key.relnode)
		return x->tbl->key.relnode < y->tbl->key.relnode ? -1 : 1;
	if (x->slotno != y->slotno)
		return x->slotno < y->slotno ? -1 : 1;
	return 0;
}

/*
 * Install a registered call's writes into the current shadow images and
 * digest the final state of every distinct slot it wrote, in (relnode,
 * slot) order so that the order the call happened to write in does not
 * matter.  The CALL record carries the digest; replay computes it again to
 * prove it repeated the call exactly.
 */
uint64
fc_write_set_install_digest(uint64 phase, uint32 *nwritten)
{
	FcWrite   **sorted = palloc(Max(fc_nwrites, 1) * sizeof(FcWrite *));
	int			n = 0;
	uint64		digest = UINT64CONST(0x6a09e667f3bcc908);
	uint32		distinct = 0;

	for (int i = 0; i < fc_nwrites; i++)
		if (fc_write_is_logged(&fc_writes[i]))
			sorted[n++] = &fc_writes[i];
	qsort(sorted, n, sizeof(FcWrite *), fc_write_key_cmp);
	for (int i = 0; i < n; i++)
	{
		FcWrite    *w = sorted[i];
		LWLock	   *lock;
		bool		live;

		if (i > 0 && fc_write_key_cmp(&sorted[i - 1], &sorted[i]) == 0)
			continue;
		lock = fc_slot_lock(w->tbl, w->slotno);
		LWLockAcquire(lock, LW_EXCLUSIVE);
		live = fc_install_slot(w->tbl, w->slotno, phase);
		digest = (digest ^ fc_slot_state_hash(w->tbl, w->slotno, live)) *
			UINT64CONST(0x100000001b3);
		digest ^= digest >> 29;
		LWLockRelease(lock);
		distinct++;
	}
	pfree(sorted);
	*nwritten = distinct;
	return digest;
}

/*
 * Does write i start a run of writes to one (still existing) table?  Each
 * run counts once in the table's write_count.
 */
bool
fc_write_starts_run(int i)
{
	FcWrite    *w = &fc_writes[i];

	return w->tbl->generation == w->generation &&
		(i == 0 || fc_writes[i - 1].tbl != w->tbl);
}

/*
 * Keep each table's committed row count for the planner: inserts add one,
 * deletes (and the old slot of a move) take one away.  And count this
 * transaction among the table's writers, which registered calls that read
 * the whole table check (read_set.c); committers call this before taking
 * their CSN.  A few atomic adds per table and transaction: consecutive
 * writes usually hit the same table.
 */
void
fc_count_live_rows(void)
{
	FcTable    *tbl = NULL;
	int64		delta = 0;

	for (int i = 0; i <= fc_nwrites; i++)
	{
		FcWrite    *w = (i < fc_nwrites) ? &fc_writes[i] : NULL;

		if (tbl != NULL && (w == NULL || w->tbl != tbl))
		{
			if (delta != 0)
				pg_atomic_fetch_add_u64(&tbl->live_rows, (uint64) delta);
			tbl = NULL;
			delta = 0;
		}
		if (w == NULL || w->tbl->generation != w->generation)
			continue;
		tbl = w->tbl;
		if (fc_write_starts_run(i))
			pg_atomic_fetch_add_u64(&tbl->write_count, 1);
		if (w->op == FC_OP_INSERT)
			delta++;
		else if (w->op == FC_OP_DELETE)
			delta--;
	}
}

/* commit.c installed this transaction's rows into the shadow images */
void
fc_write_set_installed(uint64 phase)
{
	fc_installed = true;
	fc_install_phase = phase;
}

/* Undo one write; the slot latch is held.  Must not fail. */
static void
fc_rollback_write(FcWrite *w)
{
	char	   *sp = fc_slot_ptr(w->tbl, w->slotno);
	FcSlotHeader *hdr = (FcSlotHeader *) sp;

	switch (w->op)
	{
		case FC_OP_INSERT:
			if (hdr->xmin == w->xid)
				hdr->flags = (hdr->flags & ~FC_XMIN_HINTS) | FC_XMIN_ABORTED;
			break;
		case FC_OP_UPDATE:
			if (hdr->xmin == w->xid && hdr->undo != NULL)
				fc_undo_pop_to_live(w->tbl, sp);
			break;
		case FC_OP_DELETE:
			if (hdr->xmax == w->xid)
			{
				hdr->xmax = InvalidTransactionId;
				hdr->flags &= ~FC_XMAX_BITS;
				ItemPointerSetInvalid(&hdr->next_tid);
			}
			break;
	}
}

/*
 * Roll back writes made at nesting level >= nestlevel, newest first.  If
 * the shadow images already received this transaction's rows (an error
 * after our PRE_COMMIT callback), they get the restored committed images:
 * the image we wrote, which a checkpoint swapped in since may be about to
 * read (it waits for us, see ckpt_shared.c), and the current one.
 */
static void
fc_write_set_rollback(int nestlevel)
{
	uint64		phase = fc_pp_phase();

	while (fc_nwrites > 0 && fc_writes[fc_nwrites - 1].nestlevel >= nestlevel)
	{
		FcWrite    *w = &fc_writes[--fc_nwrites];
		LWLock	   *lock;

		if (w->tbl->generation != w->generation)
			continue;
		lock = fc_slot_lock(w->tbl, w->slotno);
		LWLockAcquire(lock, LW_EXCLUSIVE);
		fc_rollback_write(w);
		if (fc_installed && !w->tbl->is_temp)
		{
			fc_install_slot(w->tbl, w->slotno, fc_install_phase);
			if (phase != fc_install_phase)
				fc_install_slot(w->tbl, w->slotno, phase);
		}
		LWLockRelease(lock);
	}
}

static void
fc_write_set_reset(void)
{
	fc_nwrites = 0;
	fc_installed = false;
	fc_locked_rows_reset();
	if (fc_writes_cap > 4096)
	{
		pfree(fc_writes);
		fc_writes = NULL;
		fc_writes_cap = 0;
	}
}

static void
fc_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			fc_commit_pre_commit();
			break;
		case XACT_EVENT_COMMIT:
			fc_prepared_note_gid(NULL);
			fc_tid_notes_at_xact_end();
			fc_call_at_xact_end();
			fc_write_set_reset();
			fc_pending_drops_at_xact_end(true);
			fc_commit_at_end();
			fc_ckpt_clear_csn();
			break;
		case XACT_EVENT_ABORT:
			fc_prepared_at_abort();
			fc_tid_notes_at_abort(0);
			fc_note_aborted_sequences();
			fc_call_at_xact_end();
			fc_commit_at_abort();
			fc_write_set_rollback(0);
			fc_write_set_reset();
			fc_abort_flush_created_files();
			fc_pending_drops_at_xact_end(false);
			fc_ckpt_clear_csn();
			break;
		case XACT_EVENT_PRE_PREPARE:
			fc_commit_check_closed_database();	/* as at commit */
			if (fc_pending_changes_exist())
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("cannot PREPARE a transaction that has created, truncated or dropped fastckpt tables"),
						 errdetail("fastckpt table storage is made or freed in shared memory when its transaction ends, "
								   "and a prepared transaction may end after a restart that loses it."),
						 errhint("Commit or roll back instead, or keep fastckpt DDL out of two-phase transactions.")));
			fc_prepare_check_table_locks();
			fc_commit_wait_reads();
			/*
			 * The rows stay in their slots, locked or written; a file keeps
			 * them across restarts.
			 */
			if (fc_write_set_has_logged_writes() || fc_locked_rows_exist())
				fc_prepared_pre_prepare();
			break;
		case XACT_EVENT_PREPARE:
			/* the prepared transaction owns its rows now (prepared.c) */
			fc_prepared_at_prepare();
			fc_tid_notes_at_xact_end();
			fc_write_set_reset();
			fc_commit_at_end();
			fc_call_at_xact_end();
			fc_catalog_watch_prepared();
			break;
		default:
			break;
	}
}

static void
fc_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					SubTransactionId parentSubid, void *arg)
{
	int			level = GetCurrentTransactionNestLevel();

	switch (event)
	{
		case SUBXACT_EVENT_START_SUB:
			fc_tid_notes_at_subxact_start(level);
			break;
		case SUBXACT_EVENT_COMMIT_SUB:
			/* the parent now owns these writes */
			for (int i = fc_nwrites - 1; i >= 0 && fc_writes[i].nestlevel >= level; i--)
				fc_writes[i].nestlevel = level - 1;
			fc_pending_drops_at_subxact_end(true, level);
			break;
		case SUBXACT_EVENT_ABORT_SUB:
			fc_tid_notes_at_abort(level);
			fc_call_at_subxact_abort();
			fc_write_set_rollback(level);
			fc_abort_flush_created_files();
			fc_pending_drops_at_subxact_end(false, level);
			break;
		default:
			break;
	}
}

void
fc_register_xact_callbacks(void)
{
	RegisterXactCallback(fc_xact_callback, NULL);
	RegisterSubXactCallback(fc_subxact_callback, NULL);
	fc_commit_register_callbacks();
	fc_catalog_watch_register_callbacks();
}
