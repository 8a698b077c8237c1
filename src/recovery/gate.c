/*-------------------------------------------------------------------------
 *
 * gate.c
 *	  Until startup recovery has rebuilt the store and the indexes, a query
 *	  touching a fastckpt table waits (up to pg_fastckpt.recovery_wait_timeout)
 *	  and then fails clearly: it never sees an empty or partial table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/relation.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/dbcommands.h"
#include "commands/prepare.h"
#include "commands/tablecmds.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "port/atomics.h"
#include "rewrite/rewriteHandler.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_fastckpt.h"
#include "access/fastckpt_am.h"
#include "recovery/attempts.h"
#include "recovery/gate.h"
#include "txn/write_set.h"

#define FC_GATE_REPLAYED_DBS	32
#define FC_GATE_CLOSED_DBS		16
#define FC_GATE_CALL_DBS		32

typedef struct FcClosedDb
{
	Oid			dbid;
	char		name[NAMEDATALEN];	/* at closing, for processes without a
									 * database (the checkpoint writer) */
	char		reason[256];
} FcClosedDb;

typedef struct FcReplayedCall
{
	Oid			dbid;
	TransactionId xid;
} FcReplayedCall;

typedef struct FcGate
{
	pg_atomic_uint32 open;
	pg_atomic_uint32 failed;	/* recovery cannot open the tables */
	pg_atomic_uint32 interrupted;	/* a SIGTERM stopped the leader midway */
	/*
	 * Databases whose tables stay closed while the others open (a logged
	 * call there could not be repeated): set before the gate opens, and
	 * only dropped databases leave.  closed_dbs counts the entries in use;
	 * stats_lock protects closed[].
	 */
	pg_atomic_uint32 closed_dbs;
	FcClosedDb	closed[FC_GATE_CLOSED_DBS];
	/*
	 * While a database is closed, no checkpoint is taken: the databases
	 * whose logged calls the log holds (those recovery replayed, and those
	 * that logged calls since), which a change to the catalogs all
	 * databases share could make fail at the next start.  More than
	 * FC_GATE_CALL_DBS: call_dbs_overflow.  stats_lock protects call_db[].
	 */
	pg_atomic_uint32 call_dbs;
	/* startup recovery read the log and found no call to replay */
	pg_atomic_uint32 no_calls;
	bool		call_dbs_overflow;
	Oid			call_db[FC_GATE_CALL_DBS];
	/*
	 * The last replayed call's xid of each database, while a snapshot may
	 * predate it; replayed_dbs counts the entries in use.  Past
	 * FC_GATE_REPLAYED_DBS databases, the last entry (dbid invalid) stands
	 * for all the others.
	 */
	pg_atomic_uint32 replayed_dbs;
	slock_t		replayed_lock;
	FcReplayedCall replayed[FC_GATE_REPLAYED_DBS];
	ConditionVariable cv;
	uint64		pp_phase;		/* Ping-Pong phase word (txn/write_set.c) */
	slock_t		stats_lock;
	FcRecoveryStats stats;
	/* recovery workers, whose parallel workers pass the closed gate too */
	slock_t		pids_lock;
	int			recovery_pids[FC_MAX_RECOVERY_PROCS];
} FcGate;

static FcGate *fc_gate = NULL;
bool		fc_in_recovery_worker = false;

static bool fc_rel_is_fastckpt(Oid relid);

Size
fc_gate_shmem_size(void)
{
	return MAXALIGN(sizeof(FcGate));
}

void
fc_gate_shmem_init(void)
{
	bool		found;

	fc_gate = ShmemInitStruct("pg_fastckpt gate", sizeof(FcGate), &found);
	if (!found)
	{
		memset(fc_gate, 0, sizeof(FcGate));
		pg_atomic_init_u32(&fc_gate->open, 0);
		pg_atomic_init_u32(&fc_gate->failed, 0);
		pg_atomic_init_u32(&fc_gate->interrupted, 0);
		pg_atomic_init_u32(&fc_gate->closed_dbs, 0);
		pg_atomic_init_u32(&fc_gate->call_dbs, 0);
		pg_atomic_init_u32(&fc_gate->no_calls, 0);
		pg_atomic_init_u32(&fc_gate->replayed_dbs, 0);
		SpinLockInit(&fc_gate->replayed_lock);
		ConditionVariableInit(&fc_gate->cv);
		SpinLockInit(&fc_gate->stats_lock);
		SpinLockInit(&fc_gate->pids_lock);
	}
}

static void
fc_gate_forget_recovery_process(int code, Datum arg)
{
	int			i = DatumGetInt32(arg);

	SpinLockAcquire(&fc_gate->pids_lock);
	if (fc_gate->recovery_pids[i] == MyProcPid)
		fc_gate->recovery_pids[i] = 0;
	SpinLockRelease(&fc_gate->pids_lock);
}

/*
 * This process is a recovery worker: it passes the closed gate, and so do
 * the parallel workers it starts (a parallel index build's scans).
 */
void
fc_gate_register_recovery_process(void)
{
	int			slot = -1;

	fc_in_recovery_worker = true;
	SpinLockAcquire(&fc_gate->pids_lock);
	for (int i = 0; i < FC_MAX_RECOVERY_PROCS && slot < 0; i++)
		if (fc_gate->recovery_pids[i] == 0)
		{
			fc_gate->recovery_pids[i] = MyProcPid;
			slot = i;
		}
	SpinLockRelease(&fc_gate->pids_lock);
	/*
	 * No free entry cannot happen: at most recovery_workers (<= 64) run at
	 * once.  If it did, this worker's parallel workers would wait at the
	 * gate and fail, and the rebuild would be retried, then reported.
	 */
	if (slot >= 0)
		before_shmem_exit(fc_gate_forget_recovery_process, Int32GetDatum(slot));
	fc_recovery_settings();
}

/*
 * The connection took the database's and the server's settings; those that
 * would make recovery's writes, lock waits or index builds fail or hang must
 * not apply (a read-only default that writers override, a lock_timeout, a
 * temp_file_limit).  Its commits (an index build writes WAL) do not wait
 * for a synchronous standby: the rows are not replicated, and with the
 * standby away the tables would stay closed.
 */
void
fc_recovery_settings(void)
{
	SetConfigOption("synchronous_commit", "local", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_read_only", "off", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("default_transaction_isolation", "read committed", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("lock_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("statement_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("idle_in_transaction_session_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	/* an index rebuild's sort may spill more than any statement ever did */
	SetConfigOption("temp_file_limit", "-1", PGC_SUSET, PGC_S_OVERRIDE);
}

/* Is this a parallel worker of a recovery worker? */
static bool
fc_gate_parallel_recovery_member(void)
{
	int			leader;
	bool		found = false;

	if (!IsParallelWorker() || MyProc == NULL || MyProc->lockGroupLeader == NULL)
		return false;
	leader = MyProc->lockGroupLeader->pid;
	SpinLockAcquire(&fc_gate->pids_lock);
	for (int i = 0; i < FC_MAX_RECOVERY_PROCS && !found; i++)
		found = (fc_gate->recovery_pids[i] == leader);
	SpinLockRelease(&fc_gate->pids_lock);
	return found;
}

uint64 *
fc_pp_phase_ptr(void)
{
	return &fc_gate->pp_phase;
}

bool
fc_gate_is_open(void)
{
	return pg_atomic_read_u32(&fc_gate->open) != 0;
}

void
fc_gate_open(void)
{
	pg_atomic_write_u32(&fc_gate->open, 1);
	ConditionVariableBroadcast(&fc_gate->cv);
}

/* Has startup recovery given up?  Then the reason goes to reason. */
bool
fc_gate_failed(char *reason, size_t len)
{
	if (pg_atomic_read_u32(&fc_gate->failed) == 0)
		return false;
	SpinLockAcquire(&fc_gate->stats_lock);
	strlcpy(reason, fc_gate->stats.error, len);
	SpinLockRelease(&fc_gate->stats_lock);
	return true;
}

/*
 * Close one database's tables, the gate being about to open for the
 * others; false if too many are closed already (then close them all).
 */
bool
fc_gate_close_database(Oid dbid, const char *reason)
{
	uint32		n = pg_atomic_read_u32(&fc_gate->closed_dbs);
	char		name[NAMEDATALEN] = "";
	bool		in_xact = IsTransactionState();
	char	   *found;

	Assert(!fc_gate_is_open());
	if (n >= FC_GATE_CLOSED_DBS)
		return false;
	if (!in_xact)
		StartTransactionCommand();
	if ((found = get_database_name(dbid)) != NULL)
		strlcpy(name, found, sizeof(name));
	if (!in_xact)
		CommitTransactionCommand();
	SpinLockAcquire(&fc_gate->stats_lock);
	fc_gate->closed[n].dbid = dbid;
	strlcpy(fc_gate->closed[n].name, name, sizeof(fc_gate->closed[n].name));
	strlcpy(fc_gate->closed[n].reason, reason, sizeof(fc_gate->closed[n].reason));
	SpinLockRelease(&fc_gate->stats_lock);
	pg_atomic_write_u32(&fc_gate->closed_dbs, n + 1);
	return true;
}

/* DROP DATABASE of a closed database committed: nothing of it is left. */
void
fc_gate_forget_database(Oid dbid)
{
	SpinLockAcquire(&fc_gate->stats_lock);
	for (uint32 i = 0; i < pg_atomic_read_u32(&fc_gate->closed_dbs); i++)
	{
		uint32		last = pg_atomic_read_u32(&fc_gate->closed_dbs) - 1;

		if (fc_gate->closed[i].dbid != dbid)
			continue;
		fc_gate->closed[i] = fc_gate->closed[last];
		pg_atomic_write_u32(&fc_gate->closed_dbs, last);
		break;
	}
	for (uint32 i = 0; i < pg_atomic_read_u32(&fc_gate->call_dbs); i++)
	{
		uint32		last = pg_atomic_read_u32(&fc_gate->call_dbs) - 1;

		if (fc_gate->call_db[i] != dbid)
			continue;
		fc_gate->call_db[i] = fc_gate->call_db[last];
		pg_atomic_write_u32(&fc_gate->call_dbs, last);
		break;
	}
	SpinLockRelease(&fc_gate->stats_lock);
}

/*
 * Are dbid's tables kept closed?  Then the reason goes to reason (if not
 * NULL).
 */
bool
fc_gate_database_closed(Oid dbid, char *reason, size_t len)
{
	bool		closed = false;

	if (likely(pg_atomic_read_u32(&fc_gate->closed_dbs) == 0))
		return false;
	SpinLockAcquire(&fc_gate->stats_lock);
	for (uint32 i = 0; i < pg_atomic_read_u32(&fc_gate->closed_dbs); i++)
	{
		if (fc_gate->closed[i].dbid != dbid)
			continue;
		closed = true;
		if (reason != NULL)
			strlcpy(reason, fc_gate->closed[i].reason, len);
		break;
	}
	SpinLockRelease(&fc_gate->stats_lock);
	return closed;
}

/*
 * Checkpoints would write a closed database's tables as recovery left
 * them, part way, and drop the log that holds the rest: none is taken
 * while a database is closed.  True, with one closed database in *dbid,
 * if so.
 */
bool
fc_gate_some_database_closed(Oid *dbid)
{
	if (likely(pg_atomic_read_u32(&fc_gate->closed_dbs) == 0))
		return false;
	SpinLockAcquire(&fc_gate->stats_lock);
	*dbid = pg_atomic_read_u32(&fc_gate->closed_dbs) == 0 ? InvalidOid : fc_gate->closed[0].dbid;
	SpinLockRelease(&fc_gate->stats_lock);
	return OidIsValid(*dbid);
}

/*
 * dbid's calls are in the log (recovery replayed some, or one was logged
 * as a CALL record): kept while a database is closed, when no checkpoint
 * takes them out of the log.  Before the call's CSN is published, so that
 * a shared catalog change either sees the database here or makes the call
 * fall back (catalog_watch.c).
 */
void
fc_gate_note_call_db(Oid dbid)
{
	if (likely(pg_atomic_read_u32(&fc_gate->closed_dbs) == 0 &&
			   pg_atomic_read_u32(&fc_gate->open) != 0))
		return;
	SpinLockAcquire(&fc_gate->stats_lock);
	{
		uint32		n = pg_atomic_read_u32(&fc_gate->call_dbs);
		bool		found = false;

		for (uint32 i = 0; i < n && !found; i++)
			found = (fc_gate->call_db[i] == dbid);
		if (!found && n < FC_GATE_CALL_DBS)
		{
			fc_gate->call_db[n] = dbid;
			pg_atomic_write_u32(&fc_gate->call_dbs, n + 1);
		}
		else if (!found)
			fc_gate->call_dbs_overflow = true;
	}
	SpinLockRelease(&fc_gate->stats_lock);
	pg_memory_barrier();
}

/* Startup recovery read the log: it has no call to replay. */
void
fc_gate_note_no_calls(void)
{
	pg_atomic_write_u32(&fc_gate->no_calls, 1);
}

/*
 * Has startup recovery found no call to replay?  False until it has read
 * the log, and once the gate is open.
 */
bool
fc_gate_no_calls_to_replay(void)
{
	return pg_atomic_read_u32(&fc_gate->no_calls) != 0;
}

/*
 * Does the log hold calls of a database whose tables are open?  Those a
 * change to the shared catalogs could make fail at the next start.
 */
bool
fc_gate_open_databases_have_calls(void)
{
	bool		found;

	pg_memory_barrier();
	SpinLockAcquire(&fc_gate->stats_lock);
	found = fc_gate->call_dbs_overflow;
	for (uint32 i = 0; i < pg_atomic_read_u32(&fc_gate->call_dbs) && !found; i++)
	{
		found = true;
		for (uint32 k = 0; k < pg_atomic_read_u32(&fc_gate->closed_dbs); k++)
			if (fc_gate->closed[k].dbid == fc_gate->call_db[i])
				found = false;
	}
	SpinLockRelease(&fc_gate->stats_lock);
	return found;
}

/*
 * A closed database's name as it was when it closed (for processes that
 * cannot look it up), or its OID.
 */
const char *
fc_gate_closed_database_label(Oid dbid)
{
	char		name[NAMEDATALEN] = "";

	SpinLockAcquire(&fc_gate->stats_lock);
	for (uint32 i = 0; i < pg_atomic_read_u32(&fc_gate->closed_dbs); i++)
		if (fc_gate->closed[i].dbid == dbid)
			strlcpy(name, fc_gate->closed[i].name, sizeof(name));
	SpinLockRelease(&fc_gate->stats_lock);
	return name[0] ? psprintf("\"%s\" (OID %u)", name, dbid) : psprintf("%u", dbid);
}

/* A database's name for messages, or its OID once it is gone. */
const char *
fc_gate_database_label(Oid dbid)
{
	char	   *name = get_database_name(dbid);

	return name != NULL ? name : psprintf("%u", dbid);
}

/*
 * May this backend use fastckpt tables: is the gate open, and its
 * database not closed?  Once the gate is open, a database's state stays
 * (only a dropped database, where nobody is connected, leaves the closed
 * list), so a backend looks it up once.
 */
static int	fc_my_db_closed = -1;

bool
fc_gate_passes(void)
{
	if (likely(fc_my_db_closed == 0))
		return true;
	if (pg_atomic_read_u32(&fc_gate->open) == 0)
		return false;
	if (fc_my_db_closed < 0 && OidIsValid(MyDatabaseId))
		fc_my_db_closed = fc_gate_database_closed(MyDatabaseId, NULL, 0) ? 1 : 0;
	return fc_my_db_closed != 1;
}

void
fc_gate_wait(Relation rel)
{
	if (likely(fc_gate_passes()) || fc_in_recovery_worker)
		return;
	fc_gate_wait_for(psprintf("fastckpt table \"%s\"", RelationGetRelationName(rel)));
}

typedef enum FcGateOutcome
{
	FC_GATE_OPENED,
	FC_GATE_FAILED,
	FC_GATE_TIMED_OUT
} FcGateOutcome;

/*
 * A statement waits at the gate at most recovery_wait_timeout in all, not
 * once for each statement it runs (CREATE EXTENSION's script, a DO block)
 * nor for each of its waits: what it waited so far, since the client's
 * message (or, in a background worker, the transaction) began.
 */
static TimestampTz fc_waited_stmt = 0;
static LocalTransactionId fc_waited_lxid = InvalidLocalTransactionId;
static long fc_waited_ms = 0;

static long
fc_gate_waited_so_far(void)
{
	TimestampTz stmt = GetCurrentStatementStartTimestamp();

	if (stmt != fc_waited_stmt || MyProc->lxid != fc_waited_lxid)
	{
		fc_waited_stmt = stmt;
		fc_waited_lxid = MyProc->lxid;
		fc_waited_ms = 0;
	}
	return fc_waited_ms;
}

/*
 * Sleep until the gate opens, recovery fails, or the statement's wait
 * times out; *waited: the statement's wait in all.
 */
static FcGateOutcome
fc_gate_await(long *waited)
{
	TimestampTz start = GetCurrentTimestamp();
	long		before = fc_gate_waited_so_far();
	FcGateOutcome outcome = FC_GATE_OPENED;

	*waited = before;
	ConditionVariablePrepareToSleep(&fc_gate->cv);
	while (pg_atomic_read_u32(&fc_gate->open) == 0)
	{
		*waited = before + TimestampDifferenceMilliseconds(start, GetCurrentTimestamp());
		if (pg_atomic_read_u32(&fc_gate->failed) != 0)
		{
			outcome = FC_GATE_FAILED;
			break;
		}
		if (*waited >= fc_recovery_wait_timeout_ms)
		{
			outcome = FC_GATE_TIMED_OUT;
			break;
		}
		/* counted as it goes: a cancel may end the wait here, mid-sleep */
		fc_waited_ms = *waited;
		PG_TRY();
		{
			ConditionVariableTimedSleep(&fc_gate->cv,
										Min(1000, fc_recovery_wait_timeout_ms - *waited),
										PG_WAIT_EXTENSION);
		}
		PG_CATCH();
		{
			fc_waited_ms = before + TimestampDifferenceMilliseconds(start, GetCurrentTimestamp());
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
	ConditionVariableCancelSleep();
	fc_waited_ms = *waited;
	return outcome;
}

/* Is this process exempt from waiting: a recovery process, or no wait due? */
static bool
fc_gate_needs_no_wait(void)
{
	if (likely(fc_gate_passes()) || fc_in_recovery_worker)
		return true;
	if (fc_gate_parallel_recovery_member())
	{
		fc_in_recovery_worker = true;	/* for the rest of its life */
		/* before it reads a row: an index expression may crash it */
		fc_attempt_join_recovery();
		return true;
	}
	return false;
}

/*
 * Wait until startup recovery has opened the fastckpt tables; what names
 * what is waited for, in the errors.
 */
void
fc_gate_wait_for(const char *what)
{
	long		waited;
	FcRecoveryStats stats;
	char		closed_reason[256];

	if (fc_gate_needs_no_wait())
		return;
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("%s is not available during recovery", what),
				 errdetail("pg_fastckpt keeps its tables out of PostgreSQL's WAL, so replication does not carry them; "
						   "a standby has only what its base backup copied, and opens none of it."),
				 errhint("Query fastckpt tables on the primary.")));

	switch (fc_gate_await(&waited))
	{
		case FC_GATE_OPENED:
			if (fc_gate_database_closed(MyDatabaseId, closed_reason, sizeof(closed_reason)))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("%s is not available: startup recovery could not restore the fastckpt tables of database \"%s\"",
								what, fc_gate_database_label(MyDatabaseId)),
						 errdetail("%s", closed_reason),
						 errhint("The tables of other databases are open. Put back what the call needs and restart the server, "
								 "or restart it with pg_fastckpt.recovery_accept_call_mismatch on to accept what replay does; "
								 "the server log says more.")));
			break;
		case FC_GATE_FAILED:
			fc_recovery_stats_get(&stats);
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s is not available: startup recovery could not restore the fastckpt tables",
							what),
					 errdetail("%s", stats.error),
					 errhint("The checkpoint files and the log under pg_fastckpt/ are kept as they are. "
							 "The server log says why recovery failed and what to do; then restart the server.")));
			break;
		case FC_GATE_TIMED_OUT:
			ereport(ERROR,
					(errcode(ERRCODE_CANNOT_CONNECT_NOW),
					 errmsg("%s is not available yet: recovery in progress", what),
					 errdetail("Waited %ld ms for pg_fastckpt startup recovery to finish.", waited),
					 errhint("Retry shortly; progress is in the server log and in fastckpt_stat_recovery. "
							 "pg_fastckpt.recovery_wait_timeout sets how long queries wait.")));
			break;
	}
}

/*
 * Call replay commits each replayed call as a transaction of its own,
 * while sessions may already wait at the gate.  A snapshot taken before
 * the last of those commits (a REPEATABLE READ transaction's, taken at its
 * first statement before it waited here; a cursor's; a STABLE function's
 * reuse of its caller's) would read the tables half replayed once the
 * gate opens: refuse it as a serialization failure, which clients retry.
 * Replay runs one call after another, database by database, so the last
 * call's xid of a database stands for all of them there; rows that row
 * images restored are frozen, visible to any snapshot, so the tables of a
 * database without replayed calls are whole for every snapshot.
 */
void
fc_gate_note_replayed_call(TransactionId xid)
{
	uint32		n;
	int			i;

	if (!TransactionIdIsValid(xid))
		return;
	SpinLockAcquire(&fc_gate->replayed_lock);
	n = pg_atomic_read_u32(&fc_gate->replayed_dbs);
	for (i = 0; i < n; i++)
		if (fc_gate->replayed[i].dbid == MyDatabaseId ||
			!OidIsValid(fc_gate->replayed[i].dbid))
			break;
	if (i == n)
	{
		/* a new database; the last entry takes in all that do not fit */
		fc_gate->replayed[i].dbid = i < FC_GATE_REPLAYED_DBS - 1 ? MyDatabaseId : InvalidOid;
		pg_atomic_write_u32(&fc_gate->replayed_dbs, n + 1);
	}
	fc_gate->replayed[i].xid = xid;
	SpinLockRelease(&fc_gate->replayed_lock);
}

/* The last call replayed in this database, if a snapshot may miss it. */
static TransactionId
fc_gate_replayed_here(void)
{
	TransactionId xid = InvalidTransactionId;
	uint32		n;

	SpinLockAcquire(&fc_gate->replayed_lock);
	n = pg_atomic_read_u32(&fc_gate->replayed_dbs);
	for (int i = 0; i < n; i++)
		if (fc_gate->replayed[i].dbid == MyDatabaseId ||
			!OidIsValid(fc_gate->replayed[i].dbid))
		{
			xid = fc_gate->replayed[i].xid;
			break;
		}
	SpinLockRelease(&fc_gate->replayed_lock);
	return xid;
}

void
fc_gate_check_snapshot(Relation rel, Snapshot snapshot)
{
	TransactionId last;

	if (likely(pg_atomic_read_u32(&fc_gate->replayed_dbs) == 0) ||
		fc_in_recovery_worker ||
		snapshot == NULL || snapshot->snapshot_type != SNAPSHOT_MVCC)
		return;
	last = fc_gate_replayed_here();
	if (!TransactionIdIsValid(last) ||
		TransactionIdFollows(snapshot->xmin, last) ||
		!XidInMVCCSnapshot(last, snapshot))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access to fastckpt table \"%s\": startup recovery restored it after this transaction's snapshot was taken",
					RelationGetRelationName(rel)),
			 errdetail("The snapshot does not see the last call that recovery replayed in this database (transaction %u); it would read the table half restored.",
					   last),
			 errhint("Retry the transaction.")));
}

/*
 * Once every snapshot's xmin is past the last replayed call of every
 * database, none can miss a replayed call any more, and the check above
 * costs nothing again.  Run often (by the checkpointer): a forgotten xid
 * would look new again after two billion transactions.
 */
void
fc_gate_forget_replayed_calls(void)
{
	TransactionId oldest;
	bool		all_old = true;
	uint32		n = pg_atomic_read_u32(&fc_gate->replayed_dbs);

	if (n == 0 || !fc_gate_is_open())
		return;
	oldest = GetOldestNonRemovableTransactionId(NULL);
	SpinLockAcquire(&fc_gate->replayed_lock);
	for (int i = 0; i < n; i++)
		if (!TransactionIdPrecedes(fc_gate->replayed[i].xid, oldest))
			all_old = false;
	if (all_old)
		pg_atomic_write_u32(&fc_gate->replayed_dbs, 0);
	SpinLockRelease(&fc_gate->replayed_lock);
}

/*
 * Before a statement that takes strong locks (DROP, TRUNCATE, ALTER, LOCK
 * ...): let startup recovery finish first, for it locks the tables it
 * rebuilds indexes of, and a statement holding a conflicting lock while it
 * waits at the gate would stall both until the wait times out.  Never an
 * error: if recovery failed or takes long, the statement goes ahead (and
 * meets the gate later if it touches fastckpt rows).
 */
void
fc_gate_wait_quietly(void)
{
	long		waited;

	if (fc_gate_needs_no_wait() || RecoveryInProgress())
		return;
	(void) fc_gate_await(&waited);
}

/*
 * Would recovery wait for this lock: its index rebuild reads a table under
 * AccessShareLock and writes its indexes under RowExclusiveLock, its call
 * replay writes tables under RowExclusiveLock, so ShareLock or stronger on
 * a fastckpt table or one of its indexes (*table: that table).  A relation
 * this transaction dropped is no longer in the catalogs: a fastckpt one if
 * it dropped one.
 */
static bool
fc_lock_stalls_recovery(const LockInstanceData *lock, Oid *table)
{
	LOCKMASK	weak = LOCKBIT_ON(AccessShareLock) | LOCKBIT_ON(RowShareLock) |
		LOCKBIT_ON(RowExclusiveLock) | LOCKBIT_ON(ShareUpdateExclusiveLock);
	Oid			relid = lock->locktag.locktag_field2;
	char		relkind;

	if (lock->pid != MyProcPid ||
		lock->locktag.locktag_type != LOCKTAG_RELATION ||
		lock->locktag.locktag_field1 != MyDatabaseId ||
		(lock->holdMask & ~weak) == 0)
		return false;
	*table = relid;
	relkind = get_rel_relkind(relid);
	if (relkind == '\0')
		return fc_pending_drops_exist();
	if (relkind == RELKIND_INDEX)
		*table = IndexGetRelation(relid, true);
	return OidIsValid(*table) && fc_rel_is_fastckpt(*table);
}

/*
 * After a statement that may lock strongly (LOCK, ALTER, DROP, CREATE
 * TRIGGER ...), if recovery still runs, its quiet wait having timed out:
 * a lock recovery would wait for must not stay held, for an idle
 * transaction would then keep every fastckpt table closed as long as it
 * lasts.  The statement fails as a query does at the closed gate.  Once
 * recovery has failed, nothing waits for the lock: what the statement
 * does meets the gate's error for that.
 */
void
fc_gate_check_held_locks(void)
{
	LockData   *data;

	if (fc_gate_needs_no_wait() || RecoveryInProgress() ||
		pg_atomic_read_u32(&fc_gate->failed) != 0 ||
		pg_atomic_read_u32(&fc_gate->open) != 0)	/* this database closed */
		return;
	data = GetLockStatusData();
	for (int i = 0; i < data->nelements; i++)
	{
		Oid			relid;
		char	   *name;

		if (!fc_lock_stalls_recovery(&data->locks[i], &relid))
			continue;
		name = get_rel_name(relid);
		ereport(ERROR,
				(errcode(ERRCODE_CANNOT_CONNECT_NOW),
				 name != NULL ?
				 errmsg("fastckpt table \"%s\" is not available yet: recovery in progress", name) :
				 errmsg("a fastckpt table dropped in this transaction is not available yet: recovery in progress"),
				 errdetail("The statement took a lock on table %u or one of its indexes that pg_fastckpt startup recovery needs before it can finish, "
						   "and recovery ran longer than pg_fastckpt.recovery_wait_timeout.", relid),
				 errhint("Retry shortly; progress is in the server log and in fastckpt_stat_recovery.")));
	}
}

void
fc_recovery_stats_get(FcRecoveryStats *stats)
{
	SpinLockAcquire(&fc_gate->stats_lock);
	*stats = fc_gate->stats;
	SpinLockRelease(&fc_gate->stats_lock);
}

void
fc_recovery_stats_begin(void)
{
	SpinLockAcquire(&fc_gate->stats_lock);
	memset(&fc_gate->stats, 0, sizeof(FcRecoveryStats));
	fc_gate->stats.started_at = GetCurrentTimestamp();
	SpinLockRelease(&fc_gate->stats_lock);
}

void
fc_recovery_stats_add(int databases, int tables, int indexes, int workers)
{
	SpinLockAcquire(&fc_gate->stats_lock);
	fc_gate->stats.databases += databases;
	fc_gate->stats.tables += tables;
	fc_gate->stats.indexes += indexes;
	fc_gate->stats.workers += workers;
	SpinLockRelease(&fc_gate->stats_lock);
}

void
fc_recovery_stats_add_calls(int64 calls, int64 mismatched, double seconds)
{
	SpinLockAcquire(&fc_gate->stats_lock);
	fc_gate->stats.calls_replayed += calls;
	fc_gate->stats.calls_mismatched += mismatched;
	fc_gate->stats.call_replay_seconds += seconds;
	SpinLockRelease(&fc_gate->stats_lock);
}

void
fc_recovery_stats_set_replay(int64 log_bytes, int64 log_records,
							 int64 records_applied, int64 records_skipped,
							 int64 rows_applied, int workers, double seconds)
{
	SpinLockAcquire(&fc_gate->stats_lock);
	fc_gate->stats.log_bytes = log_bytes;
	fc_gate->stats.log_records = log_records;
	fc_gate->stats.records_applied = records_applied;
	fc_gate->stats.records_skipped = records_skipped;
	fc_gate->stats.rows_applied = rows_applied;
	fc_gate->stats.replay_workers = workers;
	fc_gate->stats.replay_seconds = seconds;
	SpinLockRelease(&fc_gate->stats_lock);
}

void
fc_recovery_stats_finish(double index_rebuild_seconds, double total_seconds)
{
	SpinLockAcquire(&fc_gate->stats_lock);
	fc_gate->stats.finished_at = GetCurrentTimestamp();
	fc_gate->stats.index_rebuild_seconds = index_rebuild_seconds;
	fc_gate->stats.total_seconds = total_seconds;
	SpinLockRelease(&fc_gate->stats_lock);
}

void
fc_recovery_stats_set_load(int64 seq, int64 csn, bool fallback, int workers,
						   int64 bytes, int64 rows, int64 deltas, double seconds)
{
	SpinLockAcquire(&fc_gate->stats_lock);
	fc_gate->stats.checkpoint_seq = seq;
	fc_gate->stats.checkpoint_csn = csn;
	fc_gate->stats.checkpoint_fallback = fallback;
	fc_gate->stats.load_workers = workers;
	fc_gate->stats.load_bytes = bytes;
	fc_gate->stats.load_rows = rows;
	fc_gate->stats.load_deltas = deltas;
	fc_gate->stats.load_seconds = seconds;
	SpinLockRelease(&fc_gate->stats_lock);
}

/* Recovery cannot restore the tables: keep them closed, say why. */
void
fc_gate_fail(const char *reason)
{
	SpinLockAcquire(&fc_gate->stats_lock);
	strlcpy(fc_gate->stats.error, reason, sizeof(fc_gate->stats.error));
	SpinLockRelease(&fc_gate->stats_lock);
	pg_atomic_write_u32(&fc_gate->failed, 1);
	ConditionVariableBroadcast(&fc_gate->cv);
}

/*
 * Planning reads index metapages (btree height, hash metapage) before any
 * table access method callback runs, and recovery rebuilds those indexes:
 * so while the gate is closed, planning a query that touches a fastckpt
 * table (directly, through a view or subquery, or as a partition) waits
 * at the gate first.
 */
static planner_hook_type prev_planner_hook = NULL;
static post_parse_analyze_hook_type prev_post_parse_analyze_hook = NULL;

static void fc_gate_wait_before_snapshot(Node *stmt, ParseState *pstate);

static bool
fc_rel_is_fastckpt(Oid relid)
{
	Relation	rel = RelationIdGetRelation(relid);
	bool		result = false;

	if (RelationIsValid(rel))
	{
		result = (rel->rd_rel->relkind == RELKIND_RELATION &&
				  rel->rd_tableam == fc_table_am_routine());
		RelationClose(rel);
	}
	return result;
}

static bool
fc_rel_has_rls(Oid relid)
{
	Relation	rel = RelationIdGetRelation(relid);
	bool		result = false;

	if (RelationIsValid(rel))
	{
		result = rel->rd_rel->relrowsecurity;
		RelationClose(rel);
	}
	return result;
}

static bool
fc_gate_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
		{
			List	   *relids;
			ListCell   *lc;

			/*
			 * Before the rewriter (context: the views being looked into): what
			 * a view reads.  Its body names the view itself too (OLD, NEW).
			 */
			if (context != NULL && rte->relkind == RELKIND_VIEW)
			{
				List	  **expanding = (List **) context;
				Relation	view;
				Query	   *body;

				if (list_member_oid(*expanding, rte->relid))
					return false;
				/* the lock the rewriter takes; the body copied, as it copies it */
				view = relation_open(rte->relid, AccessShareLock);
				body = copyObject(get_view_query(view));
				relation_close(view, NoLock);
				*expanding = lappend_oid(*expanding, rte->relid);
				(void) query_tree_walker(body, fc_gate_walker, context,
										 QTW_EXAMINE_RTES_BEFORE);
				*expanding = list_delete_last(*expanding);
				return false;
			}
			relids = rte->inh ?
				find_all_inheritors(rte->relid, NoLock, NULL) : list_make1_oid(rte->relid);

			/*
			 * Row-level security policies are added by the rewriter too,
			 * and may read anything: wait for recovery whoever they apply
			 * to.
			 */
			if (context != NULL && fc_rel_has_rls(rte->relid))
				fc_gate_wait_quietly();

			foreach(lc, relids)
			{
				if (fc_rel_is_fastckpt(lfirst_oid(lc)))
				{
					Relation	rel = RelationIdGetRelation(lfirst_oid(lc));

					PG_TRY();
					{
						fc_gate_wait(rel);
					}
					PG_FINALLY();
					{
						RelationClose(rel);
					}
					PG_END_TRY();
				}
			}
		}
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, fc_gate_walker, context,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, fc_gate_walker, context);
}

static PlannedStmt *
fc_gate_planner(Query *parse, const char *query_string, int cursorOptions,
				ParamListInfo boundParams)
{
	if (unlikely(!fc_gate_passes()) && !fc_in_recovery_worker)
		(void) query_tree_walker(parse, fc_gate_walker, NULL, QTW_EXAMINE_RTES_BEFORE);

	/*
	 * Recovery's processes plan no parallel query, whatever a routine sets
	 * (a function's SET clause wins over any setting): a worker of one that
	 * an index expression or a replayed call started would have no entry in
	 * the attempt file, and its crash would pass for another process's,
	 * restarting the server for ever (attempts.c; h51).  A parallel index
	 * build's workers join before they evaluate anything.
	 */
	if (unlikely(fc_in_recovery_worker))
		cursorOptions &= ~CURSOR_OPT_PARALLEL_OK;
	if (prev_planner_hook)
		return prev_planner_hook(parse, query_string, cursorOptions, boundParams);
	return standard_planner(parse, query_string, cursorOptions, boundParams);
}

/*
 * Utility statements that take their snapshot before they plan (in
 * PortalRunUtility), or never plan: EXECUTE, DECLARE CURSOR, EXPLAIN,
 * CREATE TABLE AS, COPY ... TO, REFRESH MATERIALIZED VIEW.  Waiting in
 * the planner would leave them a snapshot from before startup recovery
 * finished, which fc_gate_check_snapshot refuses: wait at parse analysis
 * instead, before that snapshot is taken, so that READ COMMITTED sees
 * every replayed call as a plain query does.  Analysed queries are not
 * rewritten yet: a copy is rewritten as the statement will be, for views,
 * rule actions and row-level security policies may read fastckpt tables
 * the query does not name.
 */
static void
fc_gate_wait_for_rewritten(List *queries)
{
	ListCell   *lc;

	foreach(lc, queries)
		(void) query_tree_walker(lfirst_node(Query, lc), fc_gate_walker, NULL,
								 QTW_EXAMINE_RTES_BEFORE);
}

static void
fc_gate_wait_for_analysed(Query *query, ParseState *pstate)
{
	if (query != NULL && query->commandType == CMD_UTILITY)
		fc_gate_wait_before_snapshot(query->utilityStmt, pstate);
	else if (query != NULL)
		fc_gate_wait_for_rewritten(QueryRewrite(copyObject(query)));
}

static void
fc_gate_wait_before_snapshot(Node *stmt, ParseState *pstate)
{
	switch (nodeTag(stmt))
	{
		case T_DeclareCursorStmt:
			fc_gate_wait_for_analysed(castNode(Query, ((DeclareCursorStmt *) stmt)->query), pstate);
			break;
		case T_ExplainStmt:
			fc_gate_wait_for_analysed(castNode(Query, ((ExplainStmt *) stmt)->query), pstate);
			break;
		case T_CreateTableAsStmt:
			fc_gate_wait_for_analysed(castNode(Query, ((CreateTableAsStmt *) stmt)->query), pstate);
			break;
		case T_ExecuteStmt:
			{
				PreparedStatement *ps = FetchPreparedStatement(((ExecuteStmt *) stmt)->name, false);

				if (ps == NULL)
					break;
				/*
				 * Rewritten already, unless it is out of date (invalidated,
				 * or search_path changed since PREPARE): then it is analysed
				 * again after the snapshot, and may read anything.
				 */
				if (!ps->plansource->is_valid ||
					(ps->plansource->search_path != NULL &&
					 !OverrideSearchPathMatchesCurrent(ps->plansource->search_path)))
					fc_gate_wait_quietly();
				else
					fc_gate_wait_for_rewritten(ps->plansource->query_list);
				break;
			}
		case T_CopyStmt:
			{
				CopyStmt   *copy = (CopyStmt *) stmt;
				Oid			relid;

				if (copy->is_from)
					break;
				/* a query is analysed only as COPY runs: analyse a copy, as it will */
				if (copy->query != NULL)
				{
					RawStmt    *raw = makeNode(RawStmt);

					raw->stmt = copyObject(copy->query);
					raw->stmt_location = -1;
					fc_gate_wait_for_rewritten(
						pg_analyze_and_rewrite_fixedparams(raw, pstate ? pstate->p_sourcetext : "",
														   NULL, 0, NULL));
					break;
				}
				relid = RangeVarGetRelid(copy->relation, NoLock, true);
				if (OidIsValid(relid) && fc_rel_is_fastckpt(relid))
					fc_gate_wait_for(psprintf("fastckpt table \"%s\"", copy->relation->relname));
				/* row-level security: COPY reads through a query of the policies */
				else if (OidIsValid(relid) &&
						 check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
					fc_gate_wait_quietly();
				break;
			}
		case T_RefreshMatViewStmt:
			{
				/*
				 * Looked up as REFRESH looks it up (its owner only), but
				 * locked only to copy the body, and let go before the wait:
				 * the matview stays readable meanwhile, and REFRESH's own
				 * lock, taken later, upgrades nothing (two REFRESHes would
				 * deadlock).  So the body is walked, not rewritten (the
				 * rewriter would lock the matview, named in it as OLD and
				 * NEW); the walker looks into views itself, and waits for
				 * tables with row-level security.
				 */
				RefreshMatViewStmt *refresh = (RefreshMatViewStmt *) stmt;
				Oid			relid;
				Relation	mv;
				Query	   *body = NULL;
				List	   *expanding = NIL;

				relid = RangeVarGetRelidExtended(refresh->relation, AccessShareLock,
												 RVR_MISSING_OK, RangeVarCallbackOwnsTable,
												 NULL);
				if (!OidIsValid(relid))
					break;		/* REFRESH reports it */
				mv = relation_open(relid, NoLock);
				for (int i = 0; mv->rd_rel->relkind == RELKIND_MATVIEW &&
					 mv->rd_rules != NULL && i < mv->rd_rules->numLocks; i++)
					if (mv->rd_rules->rules[i]->event == CMD_SELECT)
						body = copyObject(linitial_node(Query, mv->rd_rules->rules[i]->actions));
				relation_close(mv, AccessShareLock);
				if (body != NULL)
					(void) query_tree_walker(body, fc_gate_walker, &expanding,
											 QTW_EXAMINE_RTES_BEFORE);
				break;
			}
		default:
			break;
	}
}

static void
fc_gate_post_parse(ParseState *pstate, Query *query, JumbleState *jstate)
{
	if (prev_post_parse_analyze_hook)
		prev_post_parse_analyze_hook(pstate, query, jstate);
	/* a standby opens no fastckpt table: their scans say so at once */
	if (unlikely(!fc_gate_passes()) && !fc_in_recovery_worker &&
		query->commandType == CMD_UTILITY && query->utilityStmt != NULL &&
		!RecoveryInProgress())
		fc_gate_wait_before_snapshot(query->utilityStmt, pstate);
}

void
fc_register_planner_gate(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = fc_gate_planner;
	prev_post_parse_analyze_hook = post_parse_analyze_hook;
	post_parse_analyze_hook = fc_gate_post_parse;
}

/*
 * In the recovery leader, after waiting for workers: a shutdown request
 * also stops the workers, so what they left undone says nothing about the
 * checkpoint or the log.  Leave at once, before that is taken for damage;
 * nothing on disk has changed, and the next start recovers from scratch.
 * Outside a shutdown (pg_terminate_backend) the postmaster starts the
 * leader again, which then has the server's processes restarted, to
 * recover from scratch (fc_recovery_was_interrupted).
 */
void
fc_recovery_exit_if_shutdown(void)
{
	if (ShutdownRequestPending)
		fc_recovery_stop("startup recovery stopped by a shutdown or termination request");
}

/* Stop startup recovery, to run again from the start; why: what stopped it. */
void
fc_recovery_stop(const char *why)
{
	ereport(LOG,
			(errmsg("pg_fastckpt: %s; it runs again from the start", why)));
	pg_atomic_write_u32(&fc_gate->interrupted, 1);
	fc_attempts_end_all();		/* stopped so, it crashed nothing */
	fc_static_worker_exit();
}

/* Did a termination request stop an earlier leader's recovery? */
bool
fc_recovery_was_interrupted(void)
{
	return pg_atomic_read_u32(&fc_gate->interrupted) != 0;
}
