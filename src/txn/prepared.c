/*-------------------------------------------------------------------------
 *
 * prepared.c
 *	  Two-phase commit of transactions that wrote fastckpt rows (and of
 *	  those that locked some: prepared_row_locks.c).
 *
 * A prepared transaction outlives its session and, since PostgreSQL keeps
 * it across restarts, the shared memory that holds its rows.  So:
 *
 * PREPARE TRANSACTION writes the net effect of the transaction on every
 * slot it changed (core/prepared_format.h) to a file of its own, durably,
 * before PostgreSQL writes its PREPARE record; the rows stay in their slots
 * as the transaction's uncommitted versions, and a shared registry entry
 * takes over what the session knew (the file, its gid, owner, database).
 * Nothing goes to the log and nothing is installed into the shadow images:
 * checkpoints keep the state before the transaction.
 *
 * COMMIT PREPARED installs the rows into the shadow images and logs their
 * images, flagged to count only if PostgreSQL's commit log says the xid
 * committed, and waits for that record to be durable -- all before
 * PostgreSQL commits, as a commit that also wrote WAL does (commit.c).
 * ROLLBACK PREPARED puts the rows back as they were before the transaction,
 * once PostgreSQL has rolled it back, while they still look busy to others
 * (fc_log_set_voidable), so that nobody acts on them half restored.  Both
 * then remove the file.
 *
 * Startup recovery, after everything committed is back, reads the files:
 * one of a transaction that committed is covered by its log record (or by
 * a checkpoint after it), one that is neither committed nor still prepared
 * is discarded, and the rows of one still prepared go back into their
 * slots as its uncommitted versions, with the indexes rebuilt to match.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/multixact.h"
#include "access/transam.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "storage/procarray.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "pg_fastckpt.h"
#include "access/fastckpt_am.h"
#include "ckpt/checkpoint.h"
#include "core/file_layout.h"
#include "core/prepared_format.h"
#include "log/log.h"
#include "procs/procs.h"
#include "recovery/gate.h"
#include "store/table_store.h"
#include "store/undo.h"
#include "txn/prepared.h"
#include "txn/write_set.h"


typedef struct FcPreparedEntry
{
	bool		in_use;			/* reserved by a PREPARE */
	bool		ready;			/* PostgreSQL prepared it */
	int			finisher;		/* pid of a COMMIT/ROLLBACK PREPARED at it */
	uint64		fxid;
	Oid			dbid;
	Oid			owner;
	char		gid[GIDSIZE];
} FcPreparedEntry;

typedef struct FcPreparedShared
{
	slock_t		lock;
	int			nentries;
	FcPreparedEntry entries[FLEXIBLE_ARRAY_MEMBER];
} FcPreparedShared;

static FcPreparedShared *fc_prep = NULL;

/* this session's PREPARE TRANSACTION */
static char fc_prepare_gid[GIDSIZE];
static int	fc_my_entry = -1;	/* reserved, not yet prepared */

/*
 * A COMMIT/ROLLBACK PREPARED at work, until PostgreSQL has finished the
 * transaction; the abort callback undoes what it did if that fails (an
 * error, or this process exiting).
 */
typedef struct FcFinish
{
	bool		active;
	int			entry;
	uint64		fxid;
	TransactionId xid;
	char	   *file;
	const fc_prepared_header *hdr;
	FcPreparedRef *refs;
	int			nrefs;
	uint64		installed_phase;	/* rows installed into this phase, or
									 * FC_NOT_INSTALLED */
	bool		counted;		/* row counts moved */
	bool		voidable;		/* rows made to look busy */
} FcFinish;

static FcFinish fc_finishing;

#define FC_NOT_INSTALLED	PG_UINT64_MAX	/* phases count up from 0 */

Size
fc_prepared_shmem_size(void)
{
	return add_size(offsetof(FcPreparedShared, entries),
					mul_size(Max(max_prepared_xacts, 0), sizeof(FcPreparedEntry)));
}

void
fc_prepared_shmem_init(void)
{
	bool		found;

	fc_prep = ShmemInitStruct("pg_fastckpt prepared transactions",
							  fc_prepared_shmem_size(), &found);
	if (!found)
	{
		memset(fc_prep, 0, fc_prepared_shmem_size());
		SpinLockInit(&fc_prep->lock);
		fc_prep->nentries = Max(max_prepared_xacts, 0);
	}
}

static void
fc_prepared_path(char *path, uint64 fxid)
{
	snprintf(path, MAXPGPATH, FC_PREPARED_DIR "/" FC_HEX_NAME_FMT,
			 (unsigned long long) fxid);
}

/* The gid of the PREPARE TRANSACTION this session is running (NULL: none). */
void
fc_prepared_note_gid(const char *gid)
{
	strlcpy(fc_prepare_gid, gid ? gid : "", GIDSIZE);
}

/* ---- PREPARE TRANSACTION ---- */

static int
fc_write_order_cmp(const void *a, const void *b)
{
	const FcWrite *x = fc_write_set_get(*(const int *) a);
	const FcWrite *y = fc_write_set_get(*(const int *) b);

	if (x->tbl != y->tbl)
		return x->tbl->key.relnode != y->tbl->key.relnode ?
			(x->tbl->key.relnode < y->tbl->key.relnode ? -1 : 1) :
			(x->tbl->generation < y->tbl->generation ? -1 : 1);
	if (x->slotno != y->slotno)
		return x->slotno < y->slotno ? -1 : 1;
	return *(const int *) a - *(const int *) b;
}

/*
 * One slot's entry: the net effect of the transaction's writes there, the
 * first of which was first_op.  A row it inserted and deleted again leaves
 * nothing to record.
 */
static void
fc_add_slot_entry(StringInfo buf, FcTable *tbl, uint64 slotno, FcWriteOp first_op,
				  uint32 *nslots)
{
	LWLock	   *lock = fc_slot_lock(tbl, slotno);
	char	   *sp = fc_slot_ptr(tbl, slotno);
	FcSlotHeader *hdr = (FcSlotHeader *) sp;
	fc_prepared_slot e;
	bool		live;

	memset(&e, 0, sizeof(e));
	LWLockAcquire(lock, LW_SHARED);
	/* what a commit would install (fc_install_slot) */
	live = (hdr->flags & FC_SLOT_USED) && !(hdr->flags & FC_XMIN_ABORTED) &&
		!(TransactionIdIsValid(hdr->xmax) && !(hdr->flags & FC_XMAX_ABORTED));
	if (first_op == FC_OP_INSERT && !live)
	{
		LWLockRelease(lock);
		return;
	}
	e.spcid = tbl->key.spcid;
	e.relnode = tbl->key.relnode;
	e.slotno = slotno;
	if (live)
	{
		e.op = first_op == FC_OP_INSERT ? FC_PREP_INSERT : FC_PREP_UPDATE;
		e.len = hdr->live_len;
		e.moved_from = first_op == FC_OP_INSERT ? hdr->moved_from : 0;
	}
	else
	{
		e.op = FC_PREP_DELETE;
		e.xmax_flags = hdr->flags & (FC_XMAX_UPDATED | FC_XMAX_KEYS_UPDATED);
		e.next_tid[0] = hdr->next_tid.ip_blkid.bi_hi;
		e.next_tid[1] = hdr->next_tid.ip_blkid.bi_lo;
		e.next_tid[2] = hdr->next_tid.ip_posid;
	}
	appendBinaryStringInfo(buf, (char *) &e, sizeof(e));
	if (live)
	{
		static const char zeros[8] = {0};

		appendBinaryStringInfo(buf, fc_pp_live(sp, &tbl->layout), e.len);
		appendBinaryStringInfo(buf, zeros, FC_PREPARED_ALIGNED(e.len) - e.len);
	}
	LWLockRelease(lock);
	(*nslots)++;
}

static void
fc_prepared_dir_ensure(void)
{
	if (MakePGDirectory(FC_PREPARED_DIR) == 0)
	{
		/* an entry not known durable is made again next time */
		if (fc_fsync_dir(FC_DIR) != 0)
		{
			int			save_errno = errno;

			(void) rmdir(FC_PREPARED_DIR);
			errno = save_errno;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not fsync directory \"%s\": %m", FC_DIR)));
		}
	}
	else if (errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", FC_PREPARED_DIR)));
}

static void
fc_prepared_write_file(const char *path, const char *data, uint32 len)
{
	char		tmp[MAXPGPATH];
	int			fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = OpenTransientFile(tmp, O_CREAT | O_TRUNC | O_WRONLY | PG_BINARY);
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", tmp)));
	errno = 0;
	if (write(fd, data, len) != len)
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		(void) unlink(tmp);
		errno = save_errno ? save_errno : ENOSPC;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", tmp)));
	}
	if (pg_fsync(fd) != 0)
	{
		int			save_errno = errno;

		CloseTransientFile(fd);
		(void) unlink(tmp);
		errno = save_errno;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", tmp)));
	}
	if (CloseTransientFile(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", tmp)));
	/* the file and the directory entry both durable */
	(void) durable_rename(tmp, path, ERROR);
}

/* Take a free registry entry; -1 if there is none. */
static int
fc_prepared_take_entry(bool ready, uint64 fxid, Oid dbid, Oid owner, const char *gid)
{
	int			found = -1;

	SpinLockAcquire(&fc_prep->lock);
	for (int i = 0; i < fc_prep->nentries && found < 0; i++)
		if (!fc_prep->entries[i].in_use)
		{
			FcPreparedEntry *e = &fc_prep->entries[i];

			found = i;
			e->in_use = true;
			e->ready = ready;
			e->finisher = 0;
			e->fxid = fxid;
			e->dbid = dbid;
			e->owner = owner;
			strlcpy(e->gid, gid, GIDSIZE);
		}
	SpinLockRelease(&fc_prep->lock);
	return found;
}

/* Reserve a registry entry for this session's transaction. */
static void
fc_prepared_reserve(uint64 fxid)
{
	int			found = fc_prepared_take_entry(false, fxid, MyDatabaseId,
											   GetUserId(), fc_prepare_gid);

	/*
	 * One entry per prepared transaction that wrote fastckpt tables, as
	 * many as PostgreSQL's: when none is free, neither is PostgreSQL's,
	 * which would say so next, in these words.
	 */
	if (found < 0)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("maximum number of prepared transactions reached"),
				 errhint("Increase max_prepared_transactions (currently %d).",
						 max_prepared_xacts)));
	fc_my_entry = found;
}

/* Is any transaction prepared, or preparing, with fastckpt rows? */
bool
fc_prepared_any_registered(void)
{
	bool		any = false;

	if (fc_prep == NULL)
		return false;
	SpinLockAcquire(&fc_prep->lock);
	for (int i = 0; i < fc_prep->nentries && !any; i++)
		any = fc_prep->entries[i].in_use;
	SpinLockRelease(&fc_prep->lock);
	return any;
}

/* Is xid (a top-level xid) that of such a transaction? */
bool
fc_prepared_xid_registered(TransactionId xid)
{
	bool		found = false;

	SpinLockAcquire(&fc_prep->lock);
	for (int i = 0; i < fc_prep->nentries && !found; i++)
		found = fc_prep->entries[i].in_use &&
			XidFromFullTransactionId(FullTransactionIdFromU64(fc_prep->entries[i].fxid)) == xid;
	SpinLockRelease(&fc_prep->lock);
	return found;
}

static void
fc_prepared_free_entry(int i)
{
	SpinLockAcquire(&fc_prep->lock);
	fc_prep->entries[i].in_use = false;
	fc_prep->entries[i].ready = false;
	fc_prep->entries[i].finisher = 0;
	SpinLockRelease(&fc_prep->lock);
}

/*
 * Before PostgreSQL prepares the transaction: write its rows' file.  The
 * write set is left alone; the rows stay in their slots.
 */
void
fc_prepared_pre_prepare(void)
{
	int			nwrites = fc_write_set_size();
	int		   *order;
	StringInfoData buf;
	fc_prepared_header hdr;
	TransactionId *xids;
	uint32		nxids = 0;
	uint32		nslots = 0;
	char		path[MAXPGPATH];
	uint64		fxid;

	/* PostgreSQL refuses it, with its own error */
	if (max_prepared_xacts <= 0)
		return;

	/*
	 * Not by PREPARE TRANSACTION: a logical replication apply worker of a
	 * two_phase subscription prepares, and later finishes, without the
	 * statements whose hook does our part.
	 */
	if (fc_prepare_gid[0] == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot PREPARE a transaction that has written to fastckpt tables other than with PREPARE TRANSACTION"),
				 errdetail("pg_fastckpt keeps a prepared transaction's rows and finishes it through the PREPARE TRANSACTION, COMMIT PREPARED and ROLLBACK PREPARED statements."),
				 errhint("For a logical replication subscription that writes fastckpt tables, set two_phase = false.")));

	/*
	 * Recovery after a crash must tell a prepared transaction from one that
	 * died before its PREPARE record was durable: make sure the xid is
	 * never handed out again.
	 */
	fc_commit_make_xid_durable();
	fc_call_count_prepared();
	fxid = U64FromFullTransactionId(GetTopFullTransactionId());
	fc_prepared_reserve(fxid);

	/* the xids that wrote, and each slot once, in the order first written */
	xids = palloc(sizeof(TransactionId) * (nwrites + 1));
	xids[nxids++] = GetTopTransactionId();
	order = palloc(sizeof(int) * Max(nwrites, 1));
	for (int i = 0; i < nwrites; i++)
	{
		FcWrite    *w = fc_write_set_get(i);
		bool		seen = false;

		order[i] = i;
		for (uint32 k = 0; k < nxids && !seen; k++)
			seen = (xids[k] == w->xid);
		if (!seen)
			xids[nxids++] = w->xid;
	}
	qsort(order, nwrites, sizeof(int), fc_write_order_cmp);

	initStringInfo(&buf);
	memset(&hdr, 0, sizeof(hdr));
	appendBinaryStringInfo(&buf, (char *) &hdr, sizeof(hdr));
	appendBinaryStringInfo(&buf, (char *) xids, nxids * sizeof(TransactionId));
	if (nxids % 2)
	{
		uint32		pad = 0;

		appendBinaryStringInfo(&buf, (char *) &pad, sizeof(pad));
	}
	for (int i = 0; i < nwrites; i++)
	{
		FcWrite    *w = fc_write_set_get(order[i]);

		if (!fc_write_is_logged(w))
			continue;
		/* the first write of a slot (sorted by slot, then write order) */
		if (i > 0)
		{
			FcWrite    *prev = fc_write_set_get(order[i - 1]);

			if (prev->tbl == w->tbl && prev->slotno == w->slotno)
				continue;
		}
		fc_add_slot_entry(&buf, w->tbl, w->slotno, w->op, &nslots);
	}
	/* registered above: a row locked stays in its slot from here on */
	fc_prepared_add_lock_entries(&buf, &nslots);

	memcpy(&hdr, buf.data, sizeof(hdr));
	hdr.magic = FC_PREPARED_MAGIC;
	hdr.version = FC_PREPARED_VERSION;
	hdr.len = buf.len;
	hdr.fxid = fxid;
	hdr.dbid = MyDatabaseId;
	hdr.owner = GetUserId();
	hdr.nxids = nxids;
	hdr.nslots = nslots;
	strlcpy(hdr.gid, fc_prepare_gid, sizeof(hdr.gid));
	memcpy(buf.data, &hdr, sizeof(hdr));
	fc_prepared_seal(buf.data);

	fc_prepared_dir_ensure();
	fc_prepared_path(path, fxid);
	fc_prepared_write_file(path, buf.data, buf.len);
	fc_ckpt_pause_point(FC_PAUSE_PREPARE);
	pfree(buf.data);
	pfree(order);
	pfree(xids);
}

/* PostgreSQL prepared the transaction: the registry entry takes over. */
void
fc_prepared_at_prepare(void)
{
	fc_prepare_gid[0] = '\0';
	if (fc_my_entry < 0)
		return;
	SpinLockAcquire(&fc_prep->lock);
	fc_prep->entries[fc_my_entry].ready = true;
	SpinLockRelease(&fc_prep->lock);
	fc_my_entry = -1;
}

static void fc_prepared_finish_failed(FcFinish *f);

/*
 * A PREPARE that failed after its file was written takes it back; a
 * COMMIT or ROLLBACK PREPARED that failed before PostgreSQL finished the
 * transaction undoes what it did.
 */
void
fc_prepared_at_abort(void)
{
	char		path[MAXPGPATH];

	fc_prepare_gid[0] = '\0';
	if (fc_finishing.active)
		fc_prepared_finish_failed(&fc_finishing);
	if (fc_my_entry < 0)
		return;
	fc_prepared_path(path, fc_prep->entries[fc_my_entry].fxid);
	/* a file left behind is discarded by recovery: the xid never prepared */
	(void) unlink(path);
	fc_prepared_free_entry(fc_my_entry);
	fc_my_entry = -1;
}

/* ---- COMMIT PREPARED / ROLLBACK PREPARED ---- */

/* Is xid one of the transaction's (the file lists those that wrote)? */
static bool
fc_is_own_xid(const FcFinish *f, TransactionId xid)
{
	const uint32 *xids = fc_prepared_xids(f->hdr);

	for (uint32 i = 0; i < f->hdr->nxids; i++)
		if (xids[i] == xid)
			return true;
	return false;
}

/* The table an entry of a file names; NULL if there is none. */
FcTable *
fc_prepared_entry_table(const fc_prepared_header *hdr, const fc_prepared_slot *s)
{
	RelFileNode rnode;

	rnode.dbNode = hdr->dbid;
	rnode.spcNode = s->spcid;
	rnode.relNode = s->relnode;
	return fc_table_lookup(&rnode);
}

static char *
fc_prepared_read_file(const char *path, size_t *size)
{
	struct stat st;
	char	   *data;
	int			fd;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0)
	{
		CloseTransientFile(fd);
		return NULL;
	}
	data = palloc(Max(st.st_size, 1));
	if (read(fd, data, st.st_size) != st.st_size)
	{
		CloseTransientFile(fd);
		pfree(data);
		return NULL;
	}
	CloseTransientFile(fd);
	*size = st.st_size;
	return data;
}

static bool fc_prepared_file_for_gid(const char *gid, bool *rows);

/*
 * Before COMMIT or ROLLBACK PREPARED of gid.  Startup recovery puts the
 * rows of prepared transactions back last: until then, finishing one of
 * ours would commit or roll back nothing, so wait.  Where recovery left
 * the tables closed (in one database, or in all: a prepared transaction's
 * file damaged, say), their rows are not all back and nothing of them
 * was logged: a rollback is PostgreSQL's alone (false; the next start
 * drops the file, even a damaged one), a commit is refused -- unless the
 * transaction only locked rows, whose locks mean nothing there.
 */
bool
fc_prepared_wait_for_tables(const char *gid, bool commit)
{
	char		reason[1];
	bool		rows;

	if (fc_gate_passes() || !fc_prepared_file_for_gid(gid, &rows))
		return true;
	if ((!commit || !rows) &&
		(fc_gate_is_open() || fc_gate_failed(reason, sizeof(reason))))
		return false;
	fc_gate_wait_for(psprintf("%s of a transaction that wrote fastckpt tables",
							  commit ? "COMMIT PREPARED" : "ROLLBACK PREPARED"));
	return true;
}

/* The xid of the transaction PostgreSQL holds prepared as gid, or none. */
static TransactionId
fc_prepared_xid_of_gid(const char *gid)
{
	TransactionId xid = InvalidTransactionId;
	Oid			argtypes[1] = {TEXTOID};
	Datum		values[1] = {CStringGetTextDatum(gid)};
	bool		isnull;

	if (SPI_connect() != SPI_OK_CONNECT)
		return InvalidTransactionId;
	if (SPI_execute_with_args("SELECT transaction FROM pg_catalog.pg_prepared_xacts WHERE gid = $1",
							  1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			xid = DatumGetTransactionId(d);
	}
	SPI_finish();
	return xid;
}

/*
 * Does a file of a prepared transaction with this gid exist?  A damaged
 * one is gid's if its name, the full xid, is that of gid's transaction.
 * *rows says whether it changed rows (or may have: damaged), beyond
 * locking some.
 */
static bool
fc_prepared_file_for_gid(const char *gid, bool *rows)
{
	DIR		   *dir = AllocateDir(FC_PREPARED_DIR);
	struct dirent *de;
	bool		found = false;
	bool		xid_known = false;
	TransactionId gid_xid = InvalidTransactionId;

	if (dir == NULL)
		return false;
	while (!found && (de = ReadDir(dir, FC_PREPARED_DIR)) != NULL)
	{
		char		path[MAXPGPATH];
		char	   *data;
		size_t		size;

		if (!fc_is_hex_name(de->d_name))
			continue;
		snprintf(path, sizeof(path), FC_PREPARED_DIR "/%s", de->d_name);
		data = fc_prepared_read_file(path, &size);
		*rows = true;
		if (data != NULL && fc_prepared_check(data, size) == NULL)
		{
			fc_prepared_cursor cur;
			const fc_prepared_slot *slot;
			const char *image;

			found = strcmp(((fc_prepared_header *) data)->gid, gid) == 0;
			*rows = false;
			fc_prepared_cursor_init(&cur, (fc_prepared_header *) data);
			while (!*rows && fc_prepared_next(&cur, &slot, &image))
				*rows = slot->op != FC_PREP_LOCK;
		}
		else
		{
			if (!xid_known)
				gid_xid = fc_prepared_xid_of_gid(gid);
			xid_known = true;
			found = TransactionIdIsValid(gid_xid) &&
				XidFromFullTransactionId(FullTransactionIdFromU64(strtou64(de->d_name, NULL, 16))) == gid_xid;
		}
		if (data)
			pfree(data);
	}
	FreeDir(dir);
	return found;
}

/*
 * Take the registry entry of gid for this session, if it is one whose
 * finish we must do; false leaves everything to PostgreSQL (not ours, or
 * PostgreSQL refuses it: another database, another owner).
 */
static bool
fc_prepared_claim(const char *gid, FcFinish *f)
{
	int			found = -1;
	bool		busy = false;

	SpinLockAcquire(&fc_prep->lock);
	for (int i = 0; i < fc_prep->nentries && found < 0; i++)
	{
		FcPreparedEntry *e = &fc_prep->entries[i];

		if (e->in_use && e->ready && strcmp(e->gid, gid) == 0)
		{
			found = i;
			if (e->dbid != MyDatabaseId ||
				(e->owner != GetUserId() && !superuser_arg(GetUserId())))
				found = -2;
			else if (e->finisher != 0)
				busy = true;
			else
			{
				e->finisher = MyProcPid;
				f->fxid = e->fxid;
			}
		}
	}
	SpinLockRelease(&fc_prep->lock);
	if (busy)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("prepared transaction with identifier \"%s\" is busy", gid)));
	if (found < 0)
		return false;
	f->entry = found;
	f->xid = XidFromFullTransactionId(FullTransactionIdFromU64(f->fxid));
	return true;
}

static void
fc_prepared_unclaim(FcFinish *f)
{
	SpinLockAcquire(&fc_prep->lock);
	fc_prep->entries[f->entry].finisher = 0;
	SpinLockRelease(&fc_prep->lock);
}

/* Read the transaction's file and find its slots. */
static void
fc_prepared_load(FcFinish *f)
{
	char		path[MAXPGPATH];
	size_t		size;
	const char *problem;
	fc_prepared_cursor cur;
	const fc_prepared_slot *s;
	const char *image;

	fc_prepared_path(path, f->fxid);
	f->file = fc_prepared_read_file(path, &size);
	if (f->file == NULL)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read file \"%s\" of prepared transaction %u: %m",
						path, f->xid)));
	if ((problem = fc_prepared_check(f->file, size)) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("file \"%s\" of prepared transaction %u is damaged: %s",
						path, f->xid, problem),
				 errdetail("It holds the transaction's changes to fastckpt tables, which cannot be finished without it.")));
	f->hdr = (const fc_prepared_header *) f->file;
	f->refs = palloc(sizeof(FcPreparedRef) * Max(f->hdr->nslots, 1));
	f->nrefs = 0;
	fc_prepared_cursor_init(&cur, f->hdr);
	while (fc_prepared_next(&cur, &s, &image))
	{
		FcTable    *tbl;

		if (s->op == FC_PREP_LOCK)
			continue;			/* ends with the transaction */
		/* the transaction's locks keep its tables from being dropped */
		if ((tbl = fc_prepared_entry_table(f->hdr, s)) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("prepared transaction %u changed fastckpt storage %u, which does not exist",
							f->xid, s->relnode)));
		f->refs[f->nrefs].tbl = tbl;
		f->refs[f->nrefs].slotno = s->slotno;
		f->refs[f->nrefs].op = s->op;
		f->nrefs++;
	}
}

/*
 * Count the transaction among its tables' writers and move their row
 * counts (fc_count_live_rows does it for a commit); sign -1 takes the
 * counts back.
 */
static void
fc_prepared_count_rows(FcFinish *f, int sign)
{
	for (int i = 0; i < f->nrefs; i++)
	{
		FcPreparedRef *r = &f->refs[i];

		if (sign > 0 && (i == 0 || f->refs[i - 1].tbl != r->tbl))
			pg_atomic_fetch_add_u64(&r->tbl->write_count, 1);
		if (r->op == FC_PREP_INSERT)
			pg_atomic_fetch_add_u64(&r->tbl->live_rows, (uint64) (int64) sign);
		else if (r->op == FC_PREP_DELETE)
			pg_atomic_fetch_sub_u64(&r->tbl->live_rows, (uint64) (int64) sign);
	}
}

/*
 * The version of a slot from before the transaction, or NULL (a row it
 * inserted); slot latch held.
 */
static const char *
fc_version_before(const FcFinish *f, FcSlotHeader *hdr, char *sp, FcTable *tbl,
				  uint32 *len)
{
	if (!fc_is_own_xid(f, hdr->xmin))
	{
		*len = hdr->live_len;
		return fc_pp_live(sp, &tbl->layout);
	}
	for (FcUndo *u = hdr->undo; u != NULL; u = u->prev)
		if (!fc_is_own_xid(f, u->xmin))
		{
			*len = u->len;
			return u->data;
		}
	return NULL;
}

/*
 * COMMIT PREPARED failed after the rows were installed: put the images
 * from before the transaction back into the shadow images, the one we
 * installed into and the current one (see fc_write_set_rollback).
 */
static void
fc_prepared_uninstall(FcFinish *f, uint64 installed_phase)
{
	uint64		phase = fc_pp_phase();

	for (int i = 0; i < f->nrefs; i++)
	{
		FcTable    *tbl = f->refs[i].tbl;
		uint64		slotno = f->refs[i].slotno;
		uint64		page;
		char	   *sp = fc_slot_locate(tbl, slotno, &page);
		FcSlotHeader *hdr = (FcSlotHeader *) sp;
		LWLock	   *lock = fc_slot_lock(tbl, slotno);
		const char *image;
		uint32		len = 0;

		LWLockAcquire(lock, LW_EXCLUSIVE);
		image = fc_version_before(f, hdr, sp, tbl, &len);
		for (int k = 0; k < 2; k++)
		{
			uint64		ph = k == 0 ? installed_phase : phase;

			if (k == 1 && phase == installed_phase)
				break;
			if (image == NULL)
				fc_slot_install_tombstone(tbl, sp, page, ph);
			else
			{
				fc_pp_install(&hdr->marks, sp, &tbl->layout, ph, image, len);
				fc_page_note_install(tbl, page, ph);
			}
		}
		LWLockRelease(lock);
	}
}

/*
 * ROLLBACK PREPARED: PostgreSQL has rolled the transaction back; put each
 * slot back as it was before it (as fc_rollback_write does, write by
 * write, for a session's own transaction).
 */
static void
fc_prepared_roll_back(FcFinish *f)
{
	for (int i = 0; i < f->nrefs; i++)
	{
		FcTable    *tbl = f->refs[i].tbl;
		uint64		slotno = f->refs[i].slotno;
		char	   *sp = fc_slot_ptr(tbl, slotno);
		FcSlotHeader *hdr = (FcSlotHeader *) sp;
		LWLock	   *lock = fc_slot_lock(tbl, slotno);

		LWLockAcquire(lock, LW_EXCLUSIVE);
		while (hdr->undo != NULL && fc_is_own_xid(f, hdr->xmin))
			fc_undo_pop_to_live(tbl, sp);
		if (fc_is_own_xid(f, hdr->xmin))
			hdr->flags = (hdr->flags & ~FC_XMIN_HINTS) | FC_XMIN_ABORTED;
		if (TransactionIdIsValid(hdr->xmax) && fc_is_own_xid(f, hdr->xmax))
		{
			hdr->xmax = InvalidTransactionId;
			hdr->flags &= ~FC_XMAX_BITS;
			ItemPointerSetInvalid(&hdr->next_tid);
		}
		LWLockRelease(lock);
	}
}

static void
fc_prepared_done(FcFinish *f)
{
	char		path[MAXPGPATH];

	fc_prepared_path(path, f->fxid);
	/* left behind by a crash, recovery discards it: the xid is decided */
	if (unlink(path) != 0 && errno != ENOENT)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not remove file \"%s\": %m", path)));
	fc_prepared_free_entry(f->entry);
}

/*
 * Undo a finish that PostgreSQL did not carry out (latches are free: the
 * abort released them).  Before commit.c voids the logged rows and lets
 * checkpoints pass (fc_ckpt_clear_csn): they wait for this.
 */
static void
fc_prepared_finish_failed(FcFinish *f)
{
	f->active = false;
	if (f->installed_phase != FC_NOT_INSTALLED)
		fc_prepared_uninstall(f, f->installed_phase);
	if (f->counted)
		fc_prepared_count_rows(f, -1);
	if (f->voidable)
		fc_log_clear_voidable();
	fc_prepared_unclaim(f);
}

void
fc_prepared_finish(const char *gid, bool commit, fc_prepared_run_fn run, void *arg)
{
	FcFinish   *f = &fc_finishing;
	MemoryContext old;

	if (fc_prep == NULL || fc_prep->nentries == 0)
	{
		run(arg);
		return;
	}

	if (!fc_prepared_wait_for_tables(gid, commit))
	{
		run(arg);
		return;
	}
	memset(f, 0, sizeof(FcFinish));
	if (!fc_prepared_claim(gid, f))
	{
		run(arg);
		return;
	}
	f->active = true;
	f->installed_phase = FC_NOT_INSTALLED;
	/* what the abort callback needs outlives the statement */
	old = MemoryContextSwitchTo(TopTransactionContext);
	fc_prepared_load(f);
	MemoryContextSwitchTo(old);
	if (f->nrefs == 0)
	{
		/* it only locked rows: the locks end with it */
		run(arg);
		f->active = false;
		fc_prepared_done(f);
		return;
	}
	if (commit)
	{
		fc_prepared_count_rows(f, 1);
		f->counted = true;
		fc_commit_log_prepared(f->refs, f->nrefs, f->fxid, f->xid, &f->installed_phase);
		fc_ckpt_pause_point(FC_PAUSE_COMMIT_PREPARED);
	}
	else
	{
		/* busy to others until they are back as they were */
		fc_log_set_voidable(f->xid, true);
		f->voidable = true;
	}
	run(arg);
	/* PostgreSQL finished the transaction: nothing to undo any more */
	f->active = false;
	if (!commit)
	{
		fc_prepared_roll_back(f);
		fc_log_clear_voidable();
	}
	fc_prepared_done(f);
}

/* ---- startup recovery ---- */

/* Put one slot of a transaction still prepared back; false if it cannot. */
static bool
fc_restore_slot(TransactionId xid, FcTable *tbl, const fc_prepared_slot *s,
				const char *image, char *error, size_t errlen)
{
	uint64		page;
	char	   *sp;
	FcSlotHeader *hdr;

	if (s->len > tbl->layout.image_capacity)
	{
		snprintf(error, errlen,
				 "prepared transaction %u holds a %u-byte row for storage %u, whose rows hold at most %u bytes",
				 xid, s->len, s->relnode, tbl->layout.image_capacity);
		return false;
	}
	if (s->op == FC_PREP_INSERT)
	{
		fc_slot_claim(tbl, s->slotno, tbl->relid);
		sp = fc_slot_locate(tbl, s->slotno, &page);
		hdr = (FcSlotHeader *) sp;
		if (hdr->flags & FC_SLOT_USED)
		{
			snprintf(error, errlen,
					 "slot " UINT64_FORMAT " of storage %u, where prepared transaction %u inserted a row, is in use",
					 s->slotno, s->relnode, xid);
			return false;
		}
		fc_slot_set_new_row(tbl, sp, image, s->len, xid, FirstCommandId);
		hdr->flags = FC_SLOT_USED;
		ItemPointerSetInvalid(&hdr->next_tid);
		hdr->moved_from = s->moved_from;
		return true;
	}

	/* an older row: committed, recovered from the checkpoint and the log */
	if (s->slotno >= fc_table_nslots(tbl) ||
		!(fc_slot_header(tbl, s->slotno)->flags & FC_SLOT_USED))
	{
		snprintf(error, errlen,
				 "slot " UINT64_FORMAT " of storage %u, whose row prepared transaction %u changed, holds no row",
				 s->slotno, s->relnode, xid);
		return false;
	}
	sp = fc_slot_locate(tbl, s->slotno, &page);
	hdr = (FcSlotHeader *) sp;
	if (s->op == FC_PREP_UPDATE)
	{
		FcUndo	   *undo;

		undo = fc_undo_alloc(tbl, tbl->relid);
		fc_undo_push_live(tbl, sp, s->slotno, undo, xid);
		fc_undo_enqueue(tbl, undo);
		memcpy(fc_pp_live(sp, &tbl->layout), image, s->len);
		hdr->live_len = s->len;
		hdr->xmin = xid;
		hdr->cmin = FirstCommandId;
		hdr->flags &= ~(FC_XMIN_HINTS | FC_XMAX_BITS | FC_SPECULATIVE);
	}
	else
	{
		hdr->xmax = xid;
		hdr->cmax = FirstCommandId;
		hdr->flags &= ~FC_XMAX_BITS;
		hdr->flags |= s->xmax_flags & (FC_XMAX_UPDATED | FC_XMAX_KEYS_UPDATED);
		hdr->next_tid.ip_blkid.bi_hi = s->next_tid[0];
		hdr->next_tid.ip_blkid.bi_lo = s->next_tid[1];
		hdr->next_tid.ip_posid = s->next_tid[2];
	}
	return true;
}

/* A file whose transaction's rows were put back, and how many */
typedef struct FcRestoredFile
{
	char	   *data;
	uint32		nrows;
} FcRestoredFile;

/* Tables whose slots recovery changed, and by how many rows */
typedef struct FcRestoredTable
{
	FcTable    *tbl;
	int64		inserted;
	int64		deleted;
} FcRestoredTable;

static FcRestoredTable *
fc_restored_table(List **tables, FcTable *tbl)
{
	ListCell   *lc;
	FcRestoredTable *t;

	foreach(lc, *tables)
	{
		t = (FcRestoredTable *) lfirst(lc);
		if (t->tbl == tbl)
			return t;
	}
	t = palloc0(sizeof(FcRestoredTable));
	t->tbl = tbl;
	*tables = lappend(*tables, t);
	return t;
}

/*
 * Restore the rows of one file's transaction; false (and error) if they
 * cannot be.  *nrows says how many.
 */
static bool
fc_restore_transaction(const fc_prepared_header *hdr, List **tables,
					   List **reindex_dbs, uint32 *nrows, char *error, size_t errlen)
{
	TransactionId xid = XidFromFullTransactionId(FullTransactionIdFromU64(hdr->fxid));
	fc_prepared_cursor cur;
	const fc_prepared_slot *s;
	const char *image;

	fc_prepared_cursor_init(&cur, hdr);
	while (fc_prepared_next(&cur, &s, &image))
	{
		FcTable    *tbl;
		FcRestoredTable *t;

		if (s->op == FC_PREP_LOCK)
			continue;
		if ((tbl = fc_prepared_entry_table(hdr, s)) == NULL)
		{
			snprintf(error, errlen,
					 "prepared transaction %u (\"%s\") changed rows of fastckpt storage %u of database %u, which recovery did not find",
					 xid, hdr->gid, s->relnode, hdr->dbid);
			return false;
		}
		if (!fc_restore_slot(xid, tbl, s, image, error, errlen))
			return false;
		t = fc_restored_table(tables, tbl);
		if (s->op == FC_PREP_INSERT)
		{
			t->inserted++;
			if (!list_member_oid(*reindex_dbs, hdr->dbid))
				*reindex_dbs = lappend_oid(*reindex_dbs, hdr->dbid);
		}
		else if (s->op == FC_PREP_DELETE)
			t->deleted++;
		(*nrows)++;
	}

	if (fc_prepared_take_entry(true, hdr->fxid, hdr->dbid, hdr->owner, hdr->gid) < 0)
	{
		snprintf(error, errlen,
				 "prepared transaction %u (\"%s\") finds no free entry among max_prepared_transactions (%d)",
				 xid, hdr->gid, fc_prep->nentries);
		return false;
	}
	return true;
}

/*
 * Is the transaction of this file still prepared?  Its xid reached the WAL
 * before the file was written (fc_commit_make_xid_durable), so after a
 * restart only PostgreSQL's prepared transaction can be running with it.
 */
static bool
fc_still_prepared(uint64 fxid_u64)
{
	FullTransactionId fxid = FullTransactionIdFromU64(fxid_u64);
	TransactionId xid = XidFromFullTransactionId(fxid);

	if (!FullTransactionIdPrecedes(fxid, ReadNextFullTransactionId()) ||
		!TransactionIdIsNormal(xid) ||
		TransactionIdPrecedes(xid, ShmemVariableCache->oldestClogXid))
		return false;
	return TransactionIdIsInProgress(xid) && !TransactionIdDidCommit(xid);
}

/*
 * After everything committed is back: put back the rows of transactions
 * still prepared, and drop the files of the others.  reindex_dbs gets the
 * databases whose indexes miss rows put back.
 */
bool
fc_prepared_restore(List **reindex_dbs, int *restored, char *error, size_t errlen)
{
	DIR		   *dir;
	struct dirent *de;
	List	   *tables = NIL;
	List	   *files = NIL;	/* of the transactions put back */
	ListCell   *lc;
	bool		ok = true;
	MemoryContext ctx = CurrentMemoryContext;
	bool		started = !IsTransactionState();

	*restored = 0;
	dir = AllocateDir(FC_PREPARED_DIR);
	if (dir == NULL)
		return true;
	while (ok && (de = ReadDir(dir, FC_PREPARED_DIR)) != NULL)
	{
		char		path[MAXPGPATH];
		char	   *data;
		size_t		size;
		const char *problem;
		const fc_prepared_header *hdr;
		int			read_errno;
		uint32		nrows;
		FcRestoredFile *rf;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), FC_PREPARED_DIR "/%s", de->d_name);
		if (!fc_is_hex_name(de->d_name))
		{
			/* a PREPARE that did not finish writing its file */
			(void) unlink(path);
			continue;
		}
		data = fc_prepared_read_file(path, &size);
		read_errno = errno;
		problem = data == NULL ? "it could not be read" : fc_prepared_check(data, size);
		if (problem != NULL &&
			!fc_still_prepared(strtou64(de->d_name, NULL, 16)))
		{
			/* its transaction ended (a ROLLBACK PREPARED meanwhile): not needed */
			ereport(LOG,
					(errmsg("pg_fastckpt: removing file \"%s\", damaged (%s), of a transaction no longer prepared",
							path, problem)));
			if (unlink(path) != 0)
				ereport(WARNING,
						(errcode_for_file_access(),
						 errmsg("could not remove file \"%s\": %m", path)));
			if (data)
				pfree(data);
			continue;
		}
		if (data == NULL)
		{
			errno = read_errno;
			snprintf(error, errlen, "could not read file \"%s\": %m", path);
			ok = false;
			break;
		}
		if (problem != NULL)
		{
			snprintf(error, errlen,
					 "file \"%s\" of a prepared transaction is damaged: %s", path, problem);
			ok = false;
			break;
		}
		hdr = (const fc_prepared_header *) data;
		if (fc_gate_database_closed(hdr->dbid, NULL, 0))
		{
			/* kept for the restart that opens its database's tables */
			pfree(data);
			continue;
		}
		if (!fc_still_prepared(hdr->fxid))
		{
			/* committed (its log record has the rows), or never prepared */
			if (unlink(path) != 0)
				ereport(WARNING,
						(errcode_for_file_access(),
						 errmsg("could not remove file \"%s\": %m", path)));
			pfree(data);
			continue;
		}
		nrows = 0;
		ok = fc_restore_transaction(hdr, &tables, reindex_dbs, &nrows, error, errlen);
		if (!ok)
		{
			pfree(data);
			break;
		}
		(*restored)++;
		rf = palloc(sizeof(FcRestoredFile));
		rf->data = data;
		rf->nrows = nrows;
		files = lappend(files, rf);
	}
	FreeDir(dir);

	/*
	 * Then their row locks, on rows any of them may have moved; in a
	 * transaction: one joining another's makes a MultiXactId.
	 */
	if (started && files != NIL)
		StartTransactionCommand();
	MemoryContextSwitchTo(ctx);
	if (files != NIL)
		MultiXactIdSetOldestMember();
	foreach(lc, files)
	{
		FcRestoredFile *rf = (FcRestoredFile *) lfirst(lc);
		const fc_prepared_header *hdr = (const fc_prepared_header *) rf->data;
		uint32		nlocks;

		fc_prepared_restore_locks(hdr, &nlocks);
		ereport(LOG,
				(errmsg("pg_fastckpt: prepared transaction %u (\"%s\"): %u changed rows and %u row locks put back",
						XidFromFullTransactionId(FullTransactionIdFromU64(hdr->fxid)),
						hdr->gid, rf->nrows, nlocks)));
		pfree(rf->data);
	}
	if (started && files != NIL)
		CommitTransactionCommand();
	MemoryContextSwitchTo(ctx);
	list_free_deep(files);

	/*
	 * Free lists without the slots put back; row counts of committed rows,
	 * which COMMIT PREPARED moves (fc_prepared_count_rows).
	 */
	foreach(lc, tables)
	{
		FcRestoredTable *t = (FcRestoredTable *) lfirst(lc);

		fc_table_finish_replay(t->tbl);
		pg_atomic_fetch_add_u64(&t->tbl->live_rows, (uint64) (t->deleted - t->inserted));
	}
	list_free_deep(tables);
	return ok;
}
