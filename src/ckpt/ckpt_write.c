/*-------------------------------------------------------------------------
 *
 * ckpt_write.c
 *	  One checkpoint, start to finish (Cao et al., Algorithm 2, at row
 *	  granularity).
 *
 * Swap the phase (S, start position), wait for the transactions still in
 * doubt below S, then walk every table committed before S, chunk by
 * chunk.  A slot whose previous-phase image is marked contributes that
 * image (or nothing, for a tombstone); any other slot contributes its row
 * in the last checkpoint, read back from its chunk file (merge) or from
 * the writer's in-memory copy of it (copy).  A chunk in which no slot is
 * marked is the last checkpoint's chunk unchanged and is hard-linked.
 *
 * Every chunk file is fdatasync'ed as it is closed (periodically, not one
 * big sync at the end).  Then the manifest, the directory, and last the
 * control file by atomic rename: until then the previous checkpoint is the
 * installed one.  Afterwards checkpoints older than the previous one and
 * the log segments before the older kept checkpoint's start are removed.
 *
 * Committing transactions never wait for the writer: it holds the table
 * directory lock shared while it reads a group of slots (only CREATE, DROP
 * and TRUNCATE of fastckpt tables take it exclusively), and the install
 * latch only for the swap itself.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/file_perm.h"
#include "core/crc32c.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "ckpt/checkpoint.h"
#include "log/log.h"
#include "store/table_store.h"

#define FC_CKPT_OUT_SIZE		(4 * 1024 * 1024)	/* write in pieces this big */
#define FC_CKPT_SYNC_EVERY		(32 * 1024 * 1024)	/* fdatasync at least this often */
#define FC_CKPT_PACE_SLEEP_MS	10	/* pacing: nap when ahead of schedule */
#define FC_CKPT_GROUP_SLOTS		4096	/* slots read per directory lock hold */
#define FC_CKPT_FLUSH_WAIT_MS	10000

/* Copy variant: the last checkpoint's chunks, kept by the writer. */
typedef struct FcCopyKey
{
	uint32		dbid;
	uint32		spcid;
	uint32		relnode;
	uint32		chunkno;
	uint64		create_csn;
} FcCopyKey;

typedef struct FcCopyEntry
{
	FcCopyKey	key;
	char	   *data;
	uint64		len;
} FcCopyEntry;

static MemoryContext fc_copy_cxt = NULL;
static HTAB *fc_copy_chunks = NULL;
static MemoryContext fc_copy_building = NULL;	/* the next one, until installed */

/* A table to write, as it was when the walk started. */
typedef struct FcCkptJob
{
	fc_ckpt_table tab;
	FcTable    *tbl;
	uint64		generation;
} FcCkptJob;

/* The last checkpoint's rows of one chunk, in slot order. */
typedef struct FcBaseReader
{
	const char *path;			/* NULL: reading from memory */
	const char *mem;
	uint64		mem_len;
	int			fd;
	char	   *buf;
	uint64		buf_len;
	uint64		buf_pos;
	bool		eof;
	uint32		chunkno;
	uint32		blockno;
	fc_ckpt_row_iter it;
	const fc_ckpt_row *row;		/* current row, NULL at the end */
	const char *image;
} FcBaseReader;

/* One checkpoint being written. */
typedef struct FcCkptRun
{
	uint64		seq;
	uint64		csn;
	uint64		start_lsn;
	uint64		phase;
	/* pacing: finish by pace_deadline, slots_done of slots_total so far */
	TimestampTz pace_start;
	TimestampTz pace_deadline;	/* 0: full speed */
	uint64		slots_total;
	uint64		slots_done;
	uint64		requests_seen;	/* fastckpt_checkpoint() calls at the start */
	fc_ckpt_control ctl;		/* installed before this one */
	char	   *base;			/* its manifest, or NULL */
	StringInfoData manifest;
	uint64		ntables;
	uint64		nchunks;
	HTAB	   *copy_next;
	MemoryContext copy_next_cxt;
	bool		paused_chunk;

	/* the chunk file being written */
	uint32		chunkno;
	int			fd;
	char	   *path;
	char	   *out;			/* sealed blocks, then the open block */
	uint64		out_len;		/* bytes of sealed blocks */
	uint32		blockno;
	uint32		crc_chain;
	uint64		file_bytes;
	uint64		since_sync;
	uint64		chunk_rows;
	StringInfoData copy_buf;

	/* figures */
	uint64		bytes_written;
	uint64		bytes_reused;
	uint64		rows;
	uint64		dirty_rows;
} FcCkptRun;

/* The key of a table's chunk in the copy variant's memory. */
static void
fc_copy_key(FcCopyKey *key, const fc_ckpt_table *tab, uint32 chunkno)
{
	memset(key, 0, sizeof(*key));
	key->dbid = tab->dbid;
	key->spcid = tab->spcid;
	key->relnode = tab->relnode;
	key->chunkno = chunkno;
	key->create_csn = tab->create_csn;
}

/* The last checkpoint's chunk in the copy variant's memory, or NULL. */
static FcCopyEntry *
fc_copy_find(const fc_ckpt_table *tab, uint32 chunkno)
{
	FcCopyKey	key;

	if (fc_copy_chunks == NULL)
		return NULL;
	fc_copy_key(&key, tab, chunkno);
	return hash_search(fc_copy_chunks, &key, HASH_FIND, NULL);
}

/* ---- the last checkpoint's chunk, streamed ---- */

static void
fc_base_fill(FcBaseReader *br, uint64 need)
{
	if (br->path == NULL || br->buf_len - br->buf_pos >= need || br->eof)
		return;
	memmove(br->buf, br->buf + br->buf_pos, br->buf_len - br->buf_pos);
	br->buf_len -= br->buf_pos;
	br->buf_pos = 0;
	while (br->buf_len < 2 * FC_CKPT_BLOCK_SIZE && !br->eof)
	{
		ssize_t		got = read(br->fd, br->buf + br->buf_len,
							   2 * FC_CKPT_BLOCK_SIZE - br->buf_len);

		if (got < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read checkpoint file \"%s\": %m", br->path)));
		if (got == 0)
			br->eof = true;
		br->buf_len += got;
	}
}

/* Move to the next row of the last checkpoint's chunk (row NULL: end). */
static void
fc_base_next(FcBaseReader *br)
{
	while (!fc_ckpt_rows_next(&br->it, &br->row, &br->image))
	{
		const char *p;
		uint64		avail;
		const char *problem;

		br->row = NULL;
		if (br->path != NULL)
		{
			fc_base_fill(br, FC_CKPT_BLOCK_HEADER);
			if (br->buf_len - br->buf_pos >= FC_CKPT_BLOCK_HEADER)
				fc_base_fill(br, Min(((const fc_ckpt_block *) (br->buf + br->buf_pos))->size,
									 FC_CKPT_BLOCK_SIZE));
			p = br->buf + br->buf_pos;
			avail = br->buf_len - br->buf_pos;
		}
		else
		{
			p = br->mem + br->buf_pos;
			avail = br->mem_len - br->buf_pos;
		}
		if (avail == 0)
			return;				/* end of the chunk */
		problem = fc_ckpt_block_check(p, avail, br->chunkno, br->blockno);
		if (problem != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("fastckpt checkpoint chunk \"%s\" is damaged at block %u: %s",
							br->path ? br->path : "(in memory)", br->blockno, problem),
					 errdetail("A checkpoint cannot be merged with it; the log is kept in full until one can.")));
		fc_ckpt_rows_begin(&br->it, p);
		br->buf_pos += ((const fc_ckpt_block *) p)->size;
		br->blockno++;
	}
}

static void
fc_base_open(FcBaseReader *br, FcCkptRun *run, const fc_ckpt_table *base_tab,
			 uint32 chunkno)
{
	FcCopyEntry *e;

	memset(br, 0, sizeof(*br));
	br->fd = -1;
	br->chunkno = chunkno;
	if (base_tab == NULL || chunkno >= base_tab->nchunks)
		return;					/* nothing: a new table or new chunk */
	if ((e = fc_copy_find(base_tab, chunkno)) != NULL)
	{
		br->mem = e->data;
		br->mem_len = e->len;
		fc_base_next(br);
		return;
	}
	br->path = fc_ckpt_chunk_path(run->ctl.refs[0].seq, base_tab, chunkno);
	br->fd = OpenTransientFile(br->path, O_RDONLY | PG_BINARY);
	if (br->fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open checkpoint file \"%s\": %m", br->path)));
	br->buf = palloc(2 * FC_CKPT_BLOCK_SIZE);
	fc_base_next(br);
}

static void
fc_base_close(FcBaseReader *br)
{
	if (br->fd >= 0)
		CloseTransientFile(br->fd);
	if (br->buf != NULL)
		pfree(br->buf);
}

/* ---- writing a chunk file ---- */

static void
fc_chunk_write_out(FcCkptRun *run, uint64 len)
{
	uint64		done = 0;

	while (done < len)
	{
		ssize_t		put;

		errno = 0;
		pgstat_report_wait_start(PG_WAIT_EXTENSION);
		put = write(run->fd, run->out + done, len - done);
		pgstat_report_wait_end();
		if (put <= 0)
		{
			if (errno == 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write checkpoint file \"%s\": %m", run->path)));
		}
		done += put;
	}
	/* start write-back now, in small steps, not as a burst at fdatasync */
	pg_flush_data(run->fd, (off_t) run->file_bytes, (off_t) len);
	if (run->copy_next != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(run->copy_next_cxt);

		appendBinaryStringInfoNT(&run->copy_buf, run->out, len);
		MemoryContextSwitchTo(old);
	}
	run->file_bytes += len;
	run->since_sync += len;
	if (run->since_sync >= FC_CKPT_SYNC_EVERY)
	{
		if (pg_fdatasync(run->fd) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not fdatasync checkpoint file \"%s\": %m", run->path)));
		run->since_sync = 0;
	}
}

/* Seal the open block if it holds rows; write out when enough piled up. */
static void
fc_chunk_seal_block(FcCkptRun *run, bool flush)
{
	char	   *blk = run->out + run->out_len;

	if (((fc_ckpt_block *) blk)->nrows > 0)
	{
		uint32		crc = fc_ckpt_block_seal(blk);

		run->crc_chain = fc_crc32c_update(run->crc_chain, &crc, sizeof(crc));
		run->out_len += ((fc_ckpt_block *) blk)->size;
		run->blockno++;
	}
	if (flush || run->out_len + FC_CKPT_BLOCK_SIZE > FC_CKPT_OUT_SIZE)
	{
		fc_chunk_write_out(run, run->out_len);
		run->out_len = 0;
	}
	fc_ckpt_block_begin(run->out + run->out_len, run->chunkno, run->blockno);
}

static void
fc_chunk_emit(FcCkptRun *run, uint32 slot, const char *image, uint32 len)
{
	if (!fc_ckpt_block_add(run->out + run->out_len, slot, image, len))
	{
		fc_chunk_seal_block(run, false);
		(void) fc_ckpt_block_add(run->out + run->out_len, slot, image, len);
	}
	run->chunk_rows++;
}

/* Is the job's table still the one we started with?  Directory lock held. */
static bool
fc_job_alive(const FcCkptJob *job)
{
	return fc_table_find_locked(job->tab.dbid, job->tab.spcid, job->tab.relnode) == job->tbl &&
		job->tbl->generation == job->generation;
}

/*
 * Any previous-phase mark in [lo, hi)?  -1 if the table went away.  When
 * there is none, every mark of the range has been visited and settled.
 */
static int
fc_chunk_has_changes(FcCkptRun *run, const FcCkptJob *job, uint64 lo, uint64 hi)
{
	int			found = 0;

	LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_SHARED);
	if (!fc_job_alive(job))
		found = -1;
	for (uint64 s = lo; found == 0 && s < hi; s++)
		if (fc_pp_previous_settle(&fc_slot_header(job->tbl, s)->marks, run->phase))
			found = 1;
	LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
	return found;
}

static void
fc_copy_remember(FcCkptRun *run, const FcCkptJob *job, uint32 chunkno,
				 const char *data, uint64 len)
{
	FcCopyKey	key;
	FcCopyEntry *e;

	fc_copy_key(&key, &job->tab, chunkno);
	e = hash_search(run->copy_next, &key, HASH_ENTER, NULL);
	e->data = (char *) data;
	e->len = len;
}

/*
 * Write chunk chunkno of a table: merge the previous images of its slots
 * with the last checkpoint's rows.  False if the table went away meanwhile
 * (dropped by a transaction with CSN >= S, whose record replay applies).
 */
static bool
fc_chunk_write(FcCkptRun *run, const FcCkptJob *job, uint32 chunkno,
			   const fc_ckpt_table *base_tab, fc_ckpt_chunk *entry)
{
	uint64		lo = (uint64) chunkno * FC_CKPT_CHUNK_SLOTS;
	uint64		hi = Min(lo + FC_CKPT_CHUNK_SLOTS, job->tab.nslots);
	FcBaseReader br;
	uint64		s = lo;
	bool		alive = true;

	run->path = fc_ckpt_chunk_path(run->seq, &job->tab, chunkno);
	run->fd = OpenTransientFile(run->path, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	if (run->fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create checkpoint file \"%s\": %m", run->path)));
	run->chunkno = chunkno;
	run->out_len = 0;
	run->blockno = 0;
	run->crc_chain = FC_CRC32C_INIT;
	run->file_bytes = 0;
	run->since_sync = 0;
	run->chunk_rows = 0;
	if (run->copy_next != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(run->copy_next_cxt);

		initStringInfo(&run->copy_buf);
		MemoryContextSwitchTo(old);
	}
	fc_ckpt_block_begin(run->out, chunkno, 0);
	fc_base_open(&br, run, base_tab, chunkno);

	while (s < hi && alive)
	{
		uint64		group_end = Min(s + FC_CKPT_GROUP_SLOTS, hi);

		LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_SHARED);
		alive = fc_job_alive(job);
		for (; alive && s < group_end; s++)
		{
			char	   *sp = fc_slot_ptr(job->tbl, s);
			uint32		off = (uint32) (s - lo);
			const char *image;
			uint32		len;
			int			state;

			state = fc_pp_take_previous(&((FcSlotHeader *) sp)->marks, sp,
										&job->tbl->layout, run->phase, &image, &len);
			while (br.row != NULL && br.row->slot < off)
				fc_base_next(&br);
			if (state == FC_PP_DIRTY)
				fc_chunk_emit(run, off, image, len);
			else if (state == FC_PP_CLEAN && br.row != NULL && br.row->slot == off)
				fc_chunk_emit(run, off, br.image, br.row->len);
			if (state != FC_PP_CLEAN)
				run->dirty_rows++;
		}
		LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
		CHECK_FOR_INTERRUPTS();
	}
	fc_base_close(&br);
	if (alive)
		fc_chunk_seal_block(run, true);
	if (alive && pg_fdatasync(run->fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fdatasync checkpoint file \"%s\": %m", run->path)));
	CloseTransientFile(run->fd);
	run->fd = -1;
	if (!alive)
		return false;

	entry->chunkno = chunkno;
	entry->crc = fc_crc32c_final(run->crc_chain);
	entry->bytes = run->file_bytes;
	entry->rows = run->chunk_rows;
	run->bytes_written += run->file_bytes;
	if (run->copy_next != NULL)
		fc_copy_remember(run, job, chunkno, run->copy_buf.data, run->copy_buf.len);
	pfree(run->path);
	run->path = NULL;
	return true;
}

/* An unchanged chunk: the last checkpoint's file, linked under the new name. */
static bool
fc_chunk_reuse(FcCkptRun *run, const FcCkptJob *job, const fc_ckpt_table *base_tab,
			   uint32 chunkno, fc_ckpt_chunk *entry)
{
	const fc_ckpt_chunk *old = &fc_ckpt_table_chunks(base_tab)[chunkno];
	char	   *from = fc_ckpt_chunk_path(run->ctl.refs[0].seq, base_tab, chunkno);
	char	   *to = fc_ckpt_chunk_path(run->seq, &job->tab, chunkno);
	bool		ok = (link(from, to) == 0);

	if (ok)
	{
		FcCopyEntry *e = run->copy_next ? fc_copy_find(base_tab, chunkno) : NULL;

		*entry = *old;
		run->bytes_reused += old->bytes;
		if (e != NULL)
		{
			char	   *data = MemoryContextAllocHuge(run->copy_next_cxt, Max(e->len, 1));

			memcpy(data, e->data, e->len);
			fc_copy_remember(run, job, chunkno, data, e->len);
		}
	}
	pfree(from);
	pfree(to);
	return ok;
}

/* The last checkpoint's entry for the same storage, or NULL. */
static const fc_ckpt_table *
fc_base_table(FcCkptRun *run, const fc_ckpt_table *tab)
{
	const fc_ckpt_manifest *m = (const fc_ckpt_manifest *) run->base;
	const fc_ckpt_table *t;

	if (m == NULL)
		return NULL;
	t = fc_ckpt_first_table(run->base);
	for (uint32 i = 0; i < m->ntables; i++, t = fc_ckpt_next_table(t))
		if (t->dbid == tab->dbid && t->spcid == tab->spcid &&
			t->relnode == tab->relnode && t->create_csn == tab->create_csn)
			return t;
	return NULL;
}

/*
 * Spread a timed checkpoint over checkpoint_completion_target of the
 * interval, as PostgreSQL's checkpointer does: ahead of schedule, sleep a
 * little.  A request (fastckpt_checkpoint) or shutdown waiting for it
 * ends the pacing: the rest runs at full speed.
 */
static void
fc_ckpt_pace(FcCkptRun *run)
{
	/* the writing done, what is left is short: never wait to install */
	while (run->pace_deadline != 0 && run->slots_done < run->slots_total)
	{
		TimestampTz now = GetCurrentTimestamp();
		double		progress = (double) run->slots_done / (double) run->slots_total;
		double		elapsed;

		if (now >= run->pace_deadline || ShutdownRequestPending ||
			fc_ckpt_pending_requests(run->requests_seen) > 0)
		{
			run->pace_deadline = 0;
			break;
		}
		elapsed = (double) (now - run->pace_start) /
			(double) (run->pace_deadline - run->pace_start);
		if (progress <= elapsed)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 FC_CKPT_PACE_SLEEP_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

static void
fc_table_write(FcCkptRun *run, FcCkptJob *job)
{
	const fc_ckpt_table *base_tab = fc_base_table(run, &job->tab);
	uint32		nchunks = (uint32) ((job->tab.nslots + FC_CKPT_CHUNK_SLOTS - 1) / FC_CKPT_CHUNK_SLOTS);
	fc_ckpt_chunk *chunks = palloc0(sizeof(fc_ckpt_chunk) * Max(nchunks, 1));
	bool		alive = true;
	uint32		c;

	for (c = 0; c < nchunks && alive; c++)
	{
		uint64		lo = (uint64) c * FC_CKPT_CHUNK_SLOTS;
		int			changes = 1;

		/* only a chunk the last checkpoint has can be reused */
		if (base_tab != NULL && c < base_tab->nchunks)
			changes = fc_chunk_has_changes(run, job, lo,
										   Min(lo + FC_CKPT_CHUNK_SLOTS, job->tab.nslots));
		if (changes < 0)
			alive = false;
		else if (changes > 0 || !fc_chunk_reuse(run, job, base_tab, c, &chunks[c]))
			alive = fc_chunk_write(run, job, c, base_tab, &chunks[c]);
		if (!run->paused_chunk)
		{
			run->paused_chunk = true;
			fc_ckpt_pause_point(FC_PAUSE_CHUNK);
		}
		run->slots_done += Min(lo + FC_CKPT_CHUNK_SLOTS, job->tab.nslots) - lo;
		fc_ckpt_pace(run);
	}
	if (!alive)
	{
		/* dropped after S: leave it out, its files with it */
		for (uint32 k = 0; k < c; k++)
		{
			char	   *path = fc_ckpt_chunk_path(run->seq, &job->tab, k);

			(void) unlink(path);
			pfree(path);
		}
		pfree(chunks);
		return;
	}
	job->tab.nchunks = nchunks;
	job->tab.rows = 0;
	job->tab.bytes = 0;
	for (uint32 k = 0; k < nchunks; k++)
	{
		job->tab.rows += chunks[k].rows;
		job->tab.bytes += chunks[k].bytes;
	}
	appendBinaryStringInfo(&run->manifest, (const char *) &job->tab, sizeof(fc_ckpt_table));
	appendBinaryStringInfo(&run->manifest, (const char *) chunks, sizeof(fc_ckpt_chunk) * nchunks);
	run->ntables++;
	run->nchunks += nchunks;
	run->rows += job->tab.rows;

	LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_SHARED);
	if (fc_job_alive(job))
		job->tbl->ckpt_bytes = job->tab.bytes;
	LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
	pfree(chunks);
}

/* The tables committed before S, as they are now. */
typedef struct FcJobList
{
	uint64		csn;
	FcCkptJob  *jobs;
	int			n;
	int			cap;
} FcJobList;

static void
fc_collect_job(FcTable *tbl, void *arg)
{
	FcJobList  *list = (FcJobList *) arg;
	FcCkptJob  *job;

	if (tbl->create_csn == 0 || tbl->create_csn >= list->csn)
		return;
	if (list->n == list->cap)
	{
		list->cap *= 2;
		list->jobs = repalloc(list->jobs, sizeof(FcCkptJob) * list->cap);
	}
	job = &list->jobs[list->n++];
	memset(job, 0, sizeof(*job));
	job->tab.dbid = tbl->key.dbid;
	job->tab.spcid = tbl->key.spcid;
	job->tab.relnode = tbl->key.relnode;
	job->tab.relid = tbl->relid;
	job->tab.image_capacity = tbl->layout.image_capacity;
	job->tab.create_csn = tbl->create_csn;
	job->tab.nslots = fc_table_nslots(tbl);
	job->tbl = tbl;
	job->generation = tbl->generation;
}

static void
fc_wait_log_flushed(uint64 lsn)
{
	TimestampTz start = GetCurrentTimestamp();

	while (fc_log_flushed_lsn() < lsn)
	{
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), FC_CKPT_FLUSH_WAIT_MS))
			ereport(ERROR,
					(errcode(ERRCODE_IO_ERROR),
					 errmsg("the fastckpt log is not durable up to the checkpoint's start position %llu after %d ms",
							(unsigned long long) lsn, FC_CKPT_FLUSH_WAIT_MS),
					 errdetail("A checkpoint is installed only once the log before it is on disk.")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

static int
fc_job_cmp(const void *a, const void *b)
{
	const fc_ckpt_table *x = &((const FcCkptJob *) a)->tab;
	const fc_ckpt_table *y = &((const FcCkptJob *) b)->tab;

	if (x->dbid != y->dbid)
		return x->dbid < y->dbid ? -1 : 1;
	if (x->spcid != y->spcid)
		return x->spcid < y->spcid ? -1 : 1;
	if (x->relnode != y->relnode)
		return x->relnode < y->relnode ? -1 : 1;
	return 0;
}

/* What a finished checkpoint adds to the figures. */
typedef struct FcCkptOutcome
{
	FcCkptRun  *run;
	FcCkptTrigger trigger;
	TimestampTz started_at;
	TimestampTz finished_at;
	uint64		segments_removed;
} FcCkptOutcome;

static void
fc_stats_success(FcCkptStats *st, void *arg)
{
	FcCkptOutcome *o = (FcCkptOutcome *) arg;

	st->checkpoints++;
	st->by_trigger[o->trigger]++;
	st->last_seq = o->run->seq;
	st->last_csn = o->run->csn;
	st->last_start_lsn = o->run->start_lsn;
	st->last_started_at = o->started_at;
	st->last_finished_at = o->finished_at;
	st->last_seconds = (double) (o->finished_at - o->started_at) / 1000000.0;
	st->last_bytes_written = o->run->bytes_written;
	st->last_bytes_reused = o->run->bytes_reused;
	st->last_rows = o->run->rows;
	st->last_dirty_rows = o->run->dirty_rows;
	st->bytes_written += o->run->bytes_written;
	st->log_segments_removed += o->segments_removed;
	st->last_error[0] = '\0';
}

static void
fc_stats_in_progress(FcCkptStats *st, void *arg)
{
	st->in_progress = *(bool *) arg;
}

/*
 * Write and install one checkpoint.  Errors propagate (the worker reports
 * them and retries later with the same swap); the installed checkpoint and
 * the log stay as they were.
 */
bool
fc_ckpt_run(FcCkptTrigger trigger, bool shutting_down)
{
	FcCkptRun	run;
	FcJobList	list;
	fc_ckpt_manifest *m;
	fc_ckpt_control ctl;
	FcCkptOutcome outcome;
	char	   *dir;
	const char *problem;
	bool		have_ctl;
	bool		retry;
	bool		in_progress = true;

	memset(&run, 0, sizeof(run));
	memset(&outcome, 0, sizeof(outcome));
	outcome.started_at = GetCurrentTimestamp();
	fc_ckpt_stats_update(fc_stats_in_progress, &in_progress);

	fc_ckpt_ensure_dirs();
	switch (fc_ckpt_read_control(&run.ctl, &problem))
	{
		case 1:
			have_ctl = true;
			break;
		case 0:
			have_ctl = false;
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the fastckpt checkpoint control file is damaged: %s", problem),
					 errdetail("No checkpoint can be installed; the log is kept in full.")));
	}
	fc_ckpt_remove_unnamed(have_ctl ? &run.ctl : NULL);
	if (have_ctl && run.ctl.nrefs > 0)
	{
		run.base = fc_ckpt_read_manifest(&run.ctl.refs[0], &problem);
		if (run.base == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("the installed fastckpt checkpoint %llu cannot be read: %s",
							(unsigned long long) run.ctl.refs[0].seq, problem),
					 errdetail("No new checkpoint can be merged with it; the log is kept in full.")));
		run.seq = run.ctl.refs[0].seq + 1;
	}
	else
		run.seq = 1;

	retry = fc_ckpt_swap(&run.csn, &run.start_lsn, &run.phase);
	if (retry)
		ereport(LOG,
				(errmsg("pg_fastckpt: retrying the checkpoint at CSN %llu",
						(unsigned long long) run.csn)));
	fc_ckpt_wait_in_doubt(run.csn);

	dir = fc_ckpt_dir_path(run.seq);
	if (MakePGDirectory(dir) < 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", dir)));

	if (fc_checkpoint_method == FC_CKPT_COPY)
	{
		HASHCTL		info;

		run.copy_next_cxt = AllocSetContextCreate(TopMemoryContext,
												  "pg_fastckpt checkpoint copy",
												  ALLOCSET_DEFAULT_SIZES);
		fc_copy_building = run.copy_next_cxt;
		info.keysize = sizeof(FcCopyKey);
		info.entrysize = sizeof(FcCopyEntry);
		info.hcxt = run.copy_next_cxt;
		run.copy_next = hash_create("pg_fastckpt checkpoint copy", 256, &info,
									HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	run.out = palloc(FC_CKPT_OUT_SIZE);
	run.fd = -1;
	initStringInfo(&run.manifest);
	appendStringInfoSpaces(&run.manifest, sizeof(fc_ckpt_manifest));

	/* the tables committed before S */
	list.csn = run.csn;
	list.cap = 64;
	list.n = 0;
	list.jobs = palloc(sizeof(FcCkptJob) * list.cap);
	fc_table_foreach(fc_collect_job, &list);
	qsort(list.jobs, list.n, sizeof(FcCkptJob), fc_job_cmp);
	for (int i = 0; i < list.n; i++)
		run.slots_total += list.jobs[i].tab.nslots;
	if (trigger == FC_TRIGGER_TIMED && fc_checkpoint_completion_target > 0)
	{
		run.requests_seen = fc_ckpt_pending_requests(0);
		run.pace_start = outcome.started_at;
		run.pace_deadline = outcome.started_at +
			(TimestampTz) (fc_checkpoint_completion_target * fc_checkpoint_timeout_s * 1000000.0);
	}
	for (int i = 0; i < list.n; i++)
		fc_table_write(&run, &list.jobs[i]);

	m = (fc_ckpt_manifest *) run.manifest.data;
	memset(m, 0, sizeof(*m));
	m->ntables = (uint32) run.ntables;
	m->total_len = run.manifest.len;
	m->seq = run.seq;
	m->csn = run.csn;
	m->start_lsn = run.start_lsn;
	m->nchunks = run.nchunks;
	m->rows = run.rows;
	m->bytes = run.bytes_written + run.bytes_reused;
	m->finished_at = GetCurrentTimestamp();
	fc_ckpt_manifest_seal(run.manifest.data);
	{
		char	   *mpath = fc_ckpt_manifest_path(run.seq);

		fc_ckpt_write_file(mpath, run.manifest.data, run.manifest.len);
		pfree(mpath);
	}
	fc_ckpt_fsync_path(dir, true);
	fc_ckpt_pause_point(FC_PAUSE_INSTALL);

	/* never install a checkpoint ahead of the durable log */
	fc_wait_log_flushed(run.start_lsn);
	memset(&ctl, 0, sizeof(ctl));
	ctl.refs[0].seq = run.seq;
	ctl.refs[0].csn = run.csn;
	ctl.refs[0].start_lsn = run.start_lsn;
	ctl.refs[0].manifest_len = run.manifest.len;
	ctl.refs[0].manifest_crc = m->crc;
	ctl.nrefs = 1;
	if (have_ctl && run.ctl.nrefs > 0)
	{
		ctl.refs[1] = run.ctl.refs[0];
		ctl.nrefs = 2;
	}
	fc_ckpt_write_control(&ctl);
	fc_ckpt_swap_done();

	/* the copy variant's memory now holds this checkpoint */
	if (fc_copy_cxt != NULL)
		MemoryContextDelete(fc_copy_cxt);
	fc_copy_cxt = run.copy_next_cxt;
	fc_copy_chunks = run.copy_next;
	fc_copy_building = NULL;

	fc_ckpt_pause_point(FC_PAUSE_TRUNCATE);
	fc_ckpt_remove_unnamed(&ctl);
	outcome.segments_removed = fc_log_remove_before(ctl.refs[ctl.nrefs - 1].start_lsn);

	outcome.run = &run;
	outcome.trigger = trigger;
	outcome.finished_at = GetCurrentTimestamp();
	fc_ckpt_stats_update(fc_stats_success, &outcome);
	in_progress = false;
	fc_ckpt_stats_update(fc_stats_in_progress, &in_progress);
	ereport(shutting_down ? LOG : DEBUG1,
			(errmsg("pg_fastckpt: checkpoint %llu at CSN %llu written in %.3f s: %llu tables, %llu rows, %llu bytes written, %llu reused, %llu log segments removed",
					(unsigned long long) run.seq, (unsigned long long) run.csn,
					(double) (outcome.finished_at - outcome.started_at) / 1000000.0,
					(unsigned long long) run.ntables, (unsigned long long) run.rows,
					(unsigned long long) run.bytes_written,
					(unsigned long long) run.bytes_reused,
					(unsigned long long) outcome.segments_removed)));
	if (run.base != NULL)
		pfree(run.base);
	pfree(run.out);
	pfree(run.manifest.data);
	pfree(list.jobs);
	pfree(dir);
	return true;
}

/*
 * After a failed attempt: drop the copy being built.  The last installed
 * checkpoint's copy stays: it is still the base of the next attempt.
 */
void
fc_ckpt_abandon_copy(void)
{
	if (fc_copy_building != NULL)
		MemoryContextDelete(fc_copy_building);
	fc_copy_building = NULL;
}
