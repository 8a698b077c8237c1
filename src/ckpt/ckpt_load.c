/*-------------------------------------------------------------------------
 *
 * ckpt_load.c
 *	  Startup: load the installed checkpoint into the arena, in parallel.
 *
 * The recovery leader reads the control file and the newest checkpoint's
 * manifest, creates its tables at their full size, then starts loader
 * workers (pg_fastckpt.recovery_workers in all, itself included) that
 * claim chunks one at a time and read them (the whole file, then its
 * deltas in order) straight into the slots, asking the kernel to read
 * ahead the chunk claimed after each.  Every block's CRC is
 * checked, and each file and chunk against the manifest.  If the newest
 * checkpoint turns out damaged, everything loaded is thrown away and the
 * one before it is used (the log is kept from its start); if no checkpoint
 * is usable, recovery stops and the tables stay closed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "tcop/tcopprot.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "pg_fastckpt.h"
#include "ckpt/checkpoint.h"
#include "core/ckpt_scan.h"
#include "recovery/attempts.h"
#include "recovery/gate.h"
#include "log/log.h"
#include "store/table_store.h"

PGDLLEXPORT void fc_ckpt_loader_main(Datum arg);

#define FC_MAX_LOADERS			64	/* pg_fastckpt.recovery_workers' maximum */

/* What the leader shares with its loaders. */
typedef struct FcLoadShared
{
	slock_t		mutex;
	fc_ckpt_ref ref;			/* the checkpoint being loaded */
	pg_atomic_uint64 next_chunk;	/* next chunk to claim, manifest order */
	pg_atomic_uint64 bytes;
	pg_atomic_uint64 rows;
	pg_atomic_uint64 deltas;
	pg_atomic_uint32 failed;
	char		error[256];
	/* by loader number: it started, it ran to the end */
	bool		started[FC_MAX_LOADERS];
	bool		finished[FC_MAX_LOADERS];
} FcLoadShared;

static FcLoadShared *fc_load = NULL;

Size
fc_ckpt_load_shmem_size(void)
{
	return MAXALIGN(sizeof(FcLoadShared));
}

void
fc_ckpt_load_shmem_init(void)
{
	bool		found;

	fc_load = ShmemInitStruct("pg_fastckpt checkpoint loading", sizeof(FcLoadShared), &found);
	if (!found)
	{
		memset(fc_load, 0, sizeof(FcLoadShared));
		SpinLockInit(&fc_load->mutex);
		pg_atomic_init_u64(&fc_load->next_chunk, 0);
		pg_atomic_init_u64(&fc_load->bytes, 0);
		pg_atomic_init_u64(&fc_load->rows, 0);
		pg_atomic_init_u64(&fc_load->deltas, 0);
		pg_atomic_init_u32(&fc_load->failed, 0);
	}
}

static void
fc_load_fail(const char *msg)
{
	SpinLockAcquire(&fc_load->mutex);
	if (pg_atomic_read_u32(&fc_load->failed) == 0)
		strlcpy(fc_load->error, msg, sizeof(fc_load->error));
	SpinLockRelease(&fc_load->mutex);
	pg_atomic_write_u32(&fc_load->failed, 1);
}

/* The n-th chunk of the manifest, in table order; false past the end. */
static bool
fc_load_find_chunk(const char *manifest, uint64 n, const fc_ckpt_table **tab,
				   const fc_ckpt_chunk **chunk)
{
	const fc_ckpt_manifest *m = (const fc_ckpt_manifest *) manifest;
	const fc_ckpt_table *t = fc_ckpt_first_table(manifest);

	for (uint32 i = 0; i < m->ntables; i++, t = fc_ckpt_next_table(t))
	{
		if (n < t->nchunks)
		{
			*tab = t;
			*chunk = &fc_ckpt_table_chunks(t)[n];
			return true;
		}
		n -= t->nchunks;
	}
	return false;
}

/* Where the rows of a chunk's files go, and how many slots hold one. */
typedef struct FcLoadTarget
{
	FcTable    *tbl;
	const fc_ckpt_table *tab;
	uint32		chunkno;
	int64		live;
} FcLoadTarget;

/*
 * fc_ckpt_block_fn: put the rows of one checked block into their slots: a
 * whole file's into empty slots, a delta's over what the files before it
 * put there (a tombstone empties the slot).
 */
static const char *
fc_load_block_rows(void *arg, const char *block)
{
	FcLoadTarget *t = (FcLoadTarget *) arg;
	fc_ckpt_row_iter it;
	const fc_ckpt_row *row;
	const char *image;

	fc_ckpt_rows_begin(&it, block);
	while (fc_ckpt_rows_next(&it, &row, &image))
	{
		uint64		slotno = (uint64) t->chunkno * FC_CKPT_CHUNK_SLOTS + row->slot;
		char	   *sp;
		FcSlotHeader *hdr;

		if (slotno >= t->tab->nslots ||
			(row->len > t->tbl->layout.image_capacity && row->len != FC_CKPT_TOMBSTONE))
			return "row outside the table's slots or image size";
		sp = fc_slot_ptr(t->tbl, slotno);
		hdr = (FcSlotHeader *) sp;
		if (hdr->flags & FC_SLOT_USED)
			t->live--;
		if (row->len == FC_CKPT_TOMBSTONE)
		{
			hdr->flags = 0;
			continue;
		}
		fc_slot_set_new_row(t->tbl, sp, image, row->len, FrozenTransactionId, FirstCommandId);
		ItemPointerSetInvalid(&hdr->next_tid);
		hdr->flags = FC_SLOT_USED | FC_XMIN_COMMITTED | FC_XMIN_FROZEN;
		hdr->link = 0;
		t->live++;
	}
	return NULL;
}

/* fc_ckpt_read_fn over a transient file, as a wait event. */
static int64_t
fc_load_read(void *arg, char *dst, size_t len)
{
	ssize_t		got;

	pgstat_report_wait_start(PG_WAIT_EXTENSION);
	got = read(*(int *) arg, dst, len);
	pgstat_report_wait_end();
	return got;
}

/*
 * Load one file of a chunk, which must have the size, CRC and row count
 * the manifest gives.  NULL on success, else what is wrong.
 */
static const char *
fc_load_file(FcLoadTarget *target, const fc_ckpt_file_want *want, char *buf,
			 char *errbuf, size_t errlen)
{
	char	   *path = fc_ckpt_chunk_path(fc_load->ref.seq, target->tab, want->chunkno,
										  want->layer);
	char		scanerr[256];
	uint64		bytes = 0;
	const char *problem;
	int			fd;

	fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	if (fd < 0)
	{
		snprintf(errbuf, errlen, "could not open \"%s\": %m", path);
		pfree(path);
		return errbuf;
	}
	(void) posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	problem = fc_ckpt_scan_file(fc_load_read, &fd, want, fc_load_block_rows, target,
								buf, &bytes, scanerr, sizeof(scanerr));
	CloseTransientFile(fd);
	if (problem != NULL)
	{
		snprintf(errbuf, errlen, "chunk \"%s\": %s", path, problem);
		problem = errbuf;
	}
	pg_atomic_fetch_add_u64(&fc_load->bytes, bytes);
	pfree(path);
	return problem;
}

/*
 * Map the slot pages a chunk's rows go to before filling them, one system
 * call per run of adjacent pages.  On 4 kB pages the rows would otherwise
 * fault their pages in one at a time, and those faults were most of a
 * load's time (a slot has room for three row images, so a checkpoint
 * fills several times its own size of memory).  MADV_POPULATE_WRITE (Linux
 * 5.14) maps the same pages without an exception per page; where it is
 * missing the rows fault their pages in as before.  A sparse chunk (fewer
 * rows than pages) is left to fault in only the pages it uses.
 */
static void
fc_load_populate(FcTable *tbl, const fc_ckpt_table *tab, const fc_ckpt_chunk *chunk)
{
#ifdef MADV_POPULATE_WRITE
	uint64		first = (uint64) chunk->chunkno * FC_CKPT_CHUNK_SLOTS;
	uint64		end = Min(first + FC_CKPT_CHUNK_SLOTS, tab->nslots);
	uint64		first_page;
	uint64		last_page;
	char	   *run = NULL;
	Size		len = 0;

	if (end <= first)
		return;
	first_page = first / tbl->slots_per_page;
	last_page = (end - 1) / tbl->slots_per_page;
	if (Max(chunk->base_rows, chunk->rows) < last_page - first_page + 1)
		return;
	for (uint64 p = first_page; p <= last_page; p++)
	{
		char	   *page = tbl->dir[p / FC_DIR_FANOUT][p % FC_DIR_FANOUT];

		if (run != NULL && run + len == page)
		{
			len += FC_PAGE_SIZE;
			continue;
		}
		if (run != NULL)
			(void) madvise(run, len, MADV_POPULATE_WRITE);
		run = page;
		len = FC_PAGE_SIZE;
	}
	(void) madvise(run, len, MADV_POPULATE_WRITE);
#endif
}

/* Load one chunk: its whole file, then its deltas in order. */
static const char *
fc_load_chunk(const fc_ckpt_table *tab, const fc_ckpt_chunk *chunk, char *buf,
			  char *errbuf, size_t errlen)
{
	RelFileNode rnode;
	FcLoadTarget target;
	const char *problem = NULL;

	rnode.dbNode = tab->dbid;
	rnode.spcNode = tab->spcid;
	rnode.relNode = tab->relnode;
	target.tbl = fc_table_lookup(&rnode);
	target.tab = tab;
	target.chunkno = chunk->chunkno;
	target.live = 0;
	if (target.tbl == NULL)
		return "table not created";
	fc_load_populate(target.tbl, tab, chunk);
	for (uint32 layer = 0; problem == NULL && layer <= chunk->ndeltas; layer++)
	{
		fc_ckpt_file_want want;

		fc_ckpt_file_wanted(tab, chunk, layer, &want);
		problem = fc_load_file(&target, &want, buf, errbuf, errlen);
	}
	if (problem == NULL && target.live != (int64) chunk->rows)
	{
		snprintf(errbuf, errlen,
				 "chunk %u of relation file %u holds %lld rows once its %u deltas are applied, the manifest says %llu",
				 chunk->chunkno, tab->relnode, (long long) target.live, chunk->ndeltas,
				 (unsigned long long) chunk->rows);
		problem = errbuf;
	}
	if (problem == NULL)
	{
		pg_atomic_fetch_add_u64(&fc_load->rows, chunk->rows);
		pg_atomic_fetch_add_u64(&fc_load->deltas, chunk->ndeltas);
	}
	return problem;
}

/*
 * Start the kernel reading a chunk's files, so that the disk works while
 * loaders fill slots.
 */
static void
fc_load_prefetch(const fc_ckpt_table *tab, const fc_ckpt_chunk *chunk)
{
	for (uint32 layer = 0; layer <= chunk->ndeltas; layer++)
	{
		char	   *path = fc_ckpt_chunk_path(fc_load->ref.seq, tab, chunk->chunkno, layer);
		int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);

		/* a file that cannot be opened is reported when it is loaded */
		if (fd >= 0)
		{
			(void) posix_fadvise(fd, 0, 0, POSIX_FADV_WILLNEED);
			CloseTransientFile(fd);
		}
		pfree(path);
	}
}

/* Claim and load chunks until none is left or one fails. */
static void
fc_load_chunks(void)
{
	const char *problem;
	char	   *manifest = fc_ckpt_read_manifest(&fc_load->ref, &problem);
	char	   *buf;
	char		errbuf[256];

	if (manifest == NULL)
	{
		fc_load_fail(problem);
		return;
	}
	buf = palloc(FC_CKPT_SCAN_BUFFER);
	while (pg_atomic_read_u32(&fc_load->failed) == 0)
	{
		uint64		n = pg_atomic_fetch_add_u64(&fc_load->next_chunk, 1);
		const fc_ckpt_table *tab;
		const fc_ckpt_chunk *chunk;
		const fc_ckpt_table *next_tab;
		const fc_ckpt_chunk *next_chunk;

		if (!fc_load_find_chunk(manifest, n, &tab, &chunk))
			break;

		/*
		 * Read ahead the chunk claimed next, by whichever loader: not
		 * claimed here, so that a small checkpoint still spreads over
		 * every loader.
		 */
		if (fc_load_find_chunk(manifest, n + 1, &next_tab, &next_chunk))
			fc_load_prefetch(next_tab, next_chunk);
		problem = fc_load_chunk(tab, chunk, buf, errbuf, sizeof(errbuf));
		if (problem != NULL)
			fc_load_fail(problem);
		fc_worker_check_interrupts();
	}
	pfree(buf);
	pfree(manifest);
}

void
fc_ckpt_loader_main(Datum arg)
{
	int			n = DatumGetInt32(arg);

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	fc_attempt_join_recovery();
	fc_load->started[n] = true;
	fc_ckpt_pause_point(FC_PAUSE_LOAD);
	fc_load_chunks();
	fc_load->finished[n] = true;
	proc_exit(0);
}

static BackgroundWorkerHandle *
fc_start_loader(int n)
{
	char		name[BGW_MAXLEN];

	snprintf(name, sizeof(name), "pg_fastckpt checkpoint loader %d", n);
	return fc_start_dynamic_worker(BGWORKER_SHMEM_ACCESS, "fc_ckpt_loader_main",
								   "pg_fastckpt checkpoint loader", name,
								   Int32GetDatum(n));
}

/* How one attempt at loading a checkpoint ended. */
typedef enum FcLoadOutcome
{
	FC_LOAD_DONE,
	FC_LOAD_DAMAGED,			/* the reason is in fc_load->error */
	FC_LOAD_INTERRUPTED			/* a loader exited before it finished */
} FcLoadOutcome;

/* attempts before loader workers that keep exiting fail the checkpoint */
#define FC_LOAD_ATTEMPTS	3

/* Load the checkpoint ref names once, with every loader we can get. */
static FcLoadOutcome
fc_load_attempt(const fc_ckpt_ref *ref, const char *manifest, FcCkptLoadResult *res)
{
	const fc_ckpt_manifest *m = (const fc_ckpt_manifest *) manifest;
	const fc_ckpt_table *t = fc_ckpt_first_table(manifest);
	BackgroundWorkerHandle **handles;
	int			started = 0;
	int			wanted = Max(fc_recovery_workers, 1) - 1;
	bool		interrupted = false;

	/* every table at its full size, so loaders never allocate */
	for (uint32 i = 0; i < m->ntables; i++, t = fc_ckpt_next_table(t))
	{
		RelFileNode rnode;
		FcTable    *tbl;

		rnode.dbNode = t->dbid;
		rnode.spcNode = t->spcid;
		rnode.relNode = t->relnode;
		tbl = fc_table_create(&rnode, t->relid, t->image_capacity, false);
		tbl->create_csn = t->create_csn;
		tbl->ckpt_bytes = t->bytes;
		if (t->nslots > 0)
			fc_slot_claim(tbl, t->nslots - 1, t->relid);
	}

	fc_load->ref = *ref;
	pg_atomic_write_u64(&fc_load->next_chunk, 0);
	pg_atomic_write_u64(&fc_load->bytes, 0);
	pg_atomic_write_u64(&fc_load->rows, 0);
	pg_atomic_write_u64(&fc_load->deltas, 0);
	pg_atomic_write_u32(&fc_load->failed, 0);
	memset(fc_load->started, 0, sizeof(fc_load->started));
	memset(fc_load->finished, 0, sizeof(fc_load->finished));
	pg_memory_barrier();

	handles = palloc0(sizeof(BackgroundWorkerHandle *) * Max(wanted, 1));
	for (int i = 0; i < wanted && started < FC_MAX_LOADERS; i++)
		if ((handles[started] = fc_start_loader(started)) != NULL)
			started++;
	if (started < wanted)
		ereport(LOG,
				(errmsg("pg_fastckpt: loading the checkpoint with %d workers instead of %d: no free background worker slot",
						started + 1, wanted + 1),
				 errhint("Raise max_worker_processes.")));

	fc_load_chunks();
	for (int i = 0; i < started; i++)
	{
		/*
		 * A loader that never ran loads nothing (we did its share); one
		 * that ran but did not finish (terminated, or an error of its
		 * own) may have left a chunk half loaded.
		 */
		(void) WaitForBackgroundWorkerShutdown(handles[i]);
		pg_memory_barrier();
		fc_recovery_exit_if_shutdown();
		if (fc_load->started[i] && !fc_load->finished[i])
			interrupted = true;
	}
	res->workers = started + 1;
	res->bytes = pg_atomic_read_u64(&fc_load->bytes);
	res->rows = pg_atomic_read_u64(&fc_load->rows);
	res->deltas = pg_atomic_read_u64(&fc_load->deltas);
	pfree(handles);

	if (pg_atomic_read_u32(&fc_load->failed) != 0)
		return FC_LOAD_DAMAGED;
	return interrupted ? FC_LOAD_INTERRUPTED : FC_LOAD_DONE;
}

/*
 * Load the checkpoint ref names.  False (and the tables dropped again) if
 * it is damaged.  A loader worker that exits before it finished says
 * nothing about the files: load the checkpoint again.
 */
static bool
fc_load_one(const fc_ckpt_ref *ref, const char *manifest, FcCkptLoadResult *res,
			char *error, size_t errlen)
{
	for (int attempt = 1;; attempt++)
	{
		FcLoadOutcome outcome = fc_load_attempt(ref, manifest, res);

		if (outcome == FC_LOAD_DONE)
			return true;
		fc_table_drop_all();
		if (outcome == FC_LOAD_DAMAGED)
		{
			SpinLockAcquire(&fc_load->mutex);
			strlcpy(error, fc_load->error, errlen);
			SpinLockRelease(&fc_load->mutex);
			return false;
		}
		if (attempt == FC_LOAD_ATTEMPTS)
		{
			snprintf(error, errlen,
					 "loader workers exited before they finished, %d times (see the server log; a restart tries again)",
					 FC_LOAD_ATTEMPTS);
			return false;
		}
		ereport(LOG,
				(errmsg("pg_fastckpt: a loader worker exited before it finished loading checkpoint %llu; loading it again",
						(unsigned long long) ref->seq)));
	}
}

/*
 * With no checkpoint control file, a log that does not start at 0: was
 * nothing ever logged?  Earlier builds' log writer prepared the second
 * segment before the first was written, so a server stopped before its
 * first record left only that one, blank.  Only that state, with nothing
 * ever written under ckpt/, is taken as an empty log, begun anew at 0;
 * anything else is damage, and stays an error.
 */
static bool
fc_log_never_written(uint64 log_first)
{
	if (log_first != FC_LOG_SEGMENT_SIZE || fc_ckpt_dir_has_entries() ||
		!fc_log_segment_blank(log_first))
		return false;
	(void) fc_log_remove_before(PG_UINT64_MAX);
	ereport(LOG,
			(errmsg("pg_fastckpt: the log holds no record and no checkpoint was ever taken: the log begins anew")));
	return fc_log_first_lsn() == 0;
}

/*
 * Load the newest usable checkpoint.  True with res->found = false when
 * there is none and the log starts at its very beginning (replay it all);
 * false, with the reason in error, when the data cannot be recovered.
 */
bool
fc_ckpt_load(FcCkptLoadResult *res, char *error, size_t errlen)
{
	fc_ckpt_control ctl;
	uint64		log_first;
	TimestampTz start = GetCurrentTimestamp();
	StringInfoData why;
	const char *problem;
	int			found;

	memset(res, 0, sizeof(*res));
	fc_ckpt_ensure_dirs();
	fc_log_dir_ensure();
	log_first = fc_log_first_lsn();
	found = fc_ckpt_read_control(&ctl, &problem);
	if (found < 0)
	{
		snprintf(error, errlen, "the checkpoint control file cannot be used: %s", problem);
		return false;
	}
	if (found == 0)
	{
		if (log_first == 0 || fc_log_never_written(log_first))
			return true;
		snprintf(error, errlen,
				 "the log starts at position %llu, but no checkpoint control file exists to hold what came before",
				 (unsigned long long) log_first);
		return false;
	}

	initStringInfo(&why);
	for (uint32 i = 0; i < ctl.nrefs; i++)
	{
		const fc_ckpt_ref *ref = &ctl.refs[i];
		char	   *manifest = fc_ckpt_read_manifest(ref, &problem);
		char		loaderr[256];

		if (manifest == NULL)
			snprintf(loaderr, sizeof(loaderr), "%s", problem);
		else if (log_first > ref->start_lsn)
			snprintf(loaderr, sizeof(loaderr),
					 "the log it needs from position %llu has been removed",
					 (unsigned long long) ref->start_lsn);
		else
		{
			ereport(LOG,
					(errmsg("pg_fastckpt: loading checkpoint %llu (CSN %llu, %llu bytes in %llu chunks)",
							(unsigned long long) ref->seq, (unsigned long long) ref->csn,
							(unsigned long long) ((const fc_ckpt_manifest *) manifest)->bytes,
							(unsigned long long) ((const fc_ckpt_manifest *) manifest)->nchunks)));
			if (fc_load_one(ref, manifest, res, loaderr, sizeof(loaderr)))
			{
				res->found = true;
				res->fell_back = (i > 0);
				res->seq = ref->seq;
				res->csn = ref->csn;
				res->start_lsn = ref->start_lsn;
				res->seconds = (double) TimestampDifferenceMilliseconds(start, GetCurrentTimestamp()) / 1000.0;
				if (i > 0)
				{
					fc_ckpt_control fixed;

					/*
					 * The next checkpoint merges with this one, not with
					 * the damaged newer one: name only this one.  The
					 * damaged files go with the next checkpoint.
					 */
					memset(&fixed, 0, sizeof(fixed));
					fixed.refs[0] = *ref;
					fixed.nrefs = 1;
					fc_ckpt_write_control(&fixed);
				}
				pfree(manifest);
				pfree(why.data);
				return true;
			}
		}
		if (manifest != NULL)
			pfree(manifest);
		ereport(WARNING,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("pg_fastckpt: checkpoint %llu cannot be used: %s",
						(unsigned long long) ref->seq, loaderr),
				 errdetail(i + 1 < ctl.nrefs ? "Trying the checkpoint before it, with a longer replay of the log." :
						   "No other checkpoint is kept.")));
		appendStringInfo(&why, "%scheckpoint %llu: %s", i > 0 ? "; " : "",
						 (unsigned long long) ref->seq, loaderr);
	}
	snprintf(error, errlen, "no usable checkpoint (%s)", why.data);
	pfree(why.data);
	return false;
}
