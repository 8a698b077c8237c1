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
 * in the last checkpoint, read back from its chunk files (merge) or from
 * the writer's in-memory copy of them (copy).  A chunk in which no slot is
 * marked is the last checkpoint's chunk unchanged and is hard-linked.  A
 * chunk with few changes keeps its files (linked) and gets one more: a
 * delta of the images taken and tombstones, until its deltas reach
 * checkpoint_delta_ratio of its whole file; then it is written whole
 * again.  Deltas turn the cost of a checkpoint from the size of the tables
 * into the size of what changed.
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
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_fastckpt.h"
#include "ckpt/checkpoint.h"
#include "ckpt/ckpt_base.h"
#include "log/log.h"
#include "store/table_store.h"

#define FC_CKPT_OUT_SIZE		(4 * 1024 * 1024)	/* write in pieces this big */
#define FC_CKPT_SYNC_EVERY		(32 * 1024 * 1024)	/* fdatasync at least this often */
#define FC_CKPT_PACE_SLEEP_MS	10	/* pacing: nap when ahead of schedule */
#define FC_CKPT_GROUP_SLOTS		4096	/* slots read per directory lock hold */

/*
 * The memos of the installed checkpoint (the one numbered
 * fc_memos_installed_seq), and of the one being written.
 */
static FcMemoSet fc_memos_installed;
static uint64 fc_memos_installed_seq = 0;
static FcMemoSet fc_memos_building;

/*
 * With checkpoint_method = copy, the bytes of the file being written, until
 * a memo takes them over (or an error drops them: fc_ckpt_abandon_copy).
 */
static StringInfoData fc_copy_buf;
static bool fc_copy_buf_open = false;

/* A table to write, as it was when the walk started. */
typedef struct FcCkptJob
{
	fc_ckpt_table tab;
	FcTable    *tbl;
	uint64		generation;
} FcCkptJob;

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
	bool		keep_copy;		/* checkpoint_method = copy */
	bool		paused_chunk;

	/* the chunk file being written */
	uint32		chunkno;
	uint32		layer;
	int			fd;
	char	   *path;
	char	   *out;			/* sealed blocks, then the open block */
	uint64		out_len;		/* bytes of sealed blocks */
	uint32		blockno;
	uint32		crc_chain;
	uint64		file_bytes;
	uint64		since_sync;
	uint64		records;		/* rows and tombstones in the file */

	/* the chunk's memo being built: which slots hold a row */
	FcChunkMemo *memo;

	/* figures */
	uint64		bytes_written;	/* I/O, tables dropped meanwhile included */
	uint64		bytes_reused;
	uint64		bytes;			/* files of the tables in the manifest */
	uint64		rows;
	uint64		dirty_rows;
	uint64		deltas_written;
} FcCkptRun;

/* The copy bytes of the file just written become layer `layer' of a memo. */
static void
fc_copy_hand_over(FcChunkMemo *memo, uint32 layer)
{
	Assert(fc_copy_buf_open);
	memo->data[layer] = fc_copy_buf.data;
	memo->len[layer] = fc_copy_buf.len;
	fc_copy_buf_open = false;
}

static void
fc_copy_drop(void)
{
	if (fc_copy_buf_open)
		pfree(fc_copy_buf.data);
	fc_copy_buf_open = false;
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
	fc_start_writeback(run->fd, (off_t) run->file_bytes, (off_t) len);
	if (run->keep_copy)
		appendBinaryStringInfoNT(&fc_copy_buf, run->out, len);
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
	fc_ckpt_block_begin(run->out + run->out_len, run->chunkno, run->layer, run->blockno);
}

/* Add a row (or, in a delta, a tombstone) to the file being written. */
static void
fc_chunk_emit(FcCkptRun *run, uint32 slot, const char *image, uint32 len)
{
	if (!fc_ckpt_block_add(run->out + run->out_len, slot, image, len))
	{
		fc_chunk_seal_block(run, false);
		(void) fc_ckpt_block_add(run->out + run->out_len, slot, image, len);
	}
	run->records++;
}

/* Create file `layer' of a chunk in the new checkpoint. */
static void
fc_chunk_file_begin(FcCkptRun *run, const FcCkptJob *job, uint32 chunkno,
					uint32 layer)
{
	run->path = fc_ckpt_chunk_path(run->seq, &job->tab, chunkno, layer);
	/* a leftover name may be a link to an installed checkpoint's file */
	(void) unlink(run->path);
	run->fd = OpenTransientFile(run->path, O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (run->fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create checkpoint file \"%s\": %m", run->path)));
	run->chunkno = chunkno;
	run->layer = layer;
	run->out_len = 0;
	run->blockno = 0;
	run->crc_chain = FC_CRC32C_INIT;
	run->file_bytes = 0;
	run->since_sync = 0;
	run->records = 0;
	if (run->keep_copy)
	{
		MemoryContext old = MemoryContextSwitchTo(fc_memo_data_context());

		initStringInfo(&fc_copy_buf);
		fc_copy_buf_open = true;
		MemoryContextSwitchTo(old);
	}
	fc_ckpt_block_begin(run->out, chunkno, layer, 0);
}

/*
 * Finish the file: write what is left and make it durable.  A file left
 * unfinished (its table went away, or it holds nothing) is removed.
 * Returns the file's CRC.
 */
static uint32
fc_chunk_file_end(FcCkptRun *run, bool keep)
{
	if (keep)
	{
		fc_chunk_seal_block(run, true);
		if (pg_fdatasync(run->fd) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not fdatasync checkpoint file \"%s\": %m", run->path)));
	}
	CloseTransientFile(run->fd);
	run->fd = -1;
	if (!keep)
	{
		(void) unlink(run->path);
		fc_copy_drop();
	}
	else
		run->bytes_written += run->file_bytes;
	pfree(run->path);
	run->path = NULL;
	return fc_crc32c_final(run->crc_chain);
}

/* Is the job's table still the one we started with?  Directory lock held. */
static bool
fc_job_alive(const FcCkptJob *job)
{
	return fc_table_find_locked(job->tab.dbid, job->tab.spcid, job->tab.relnode) == job->tbl &&
		job->tbl->generation == job->generation;
}

/*
 * The previous-phase bit of a slot page's mark summary, and whether all of
 * the page's slots (up to the table's end) lie in [lo, hi): only then may a
 * walk of [lo, hi) that left every mark of the page clean clear the bit (a
 * page across two chunks keeps it).
 */
static uint8 *
fc_page_summary(FcCkptRun *run, const FcCkptJob *job, uint64 page, uint64 lo,
				uint64 hi, bool *marked, bool *whole)
{
	uint64		spp = job->tbl->slots_per_page;
	uint8	   *m = fc_page_marks(job->tbl, page);
	uint8		bit = (uint8) (1 << fc_pp_previous_image(run->phase));

	*marked = (__atomic_load_n(m, __ATOMIC_RELAXED) & bit) != 0;
	*whole = page * spp >= lo && Min((page + 1) * spp, job->tab.nslots) <= hi;
	return m;
}

static void
fc_page_summary_clear(FcCkptRun *run, uint8 *m)
{
	__atomic_fetch_and(m, (uint8) ~(1 << fc_pp_previous_image(run->phase)), __ATOMIC_RELAXED);
}

/*
 * Any previous-phase mark in [lo, hi)?  -1 if the table went away.  When
 * there is none, every mark of the range has been visited and settled.
 * Pages whose summary has no previous-phase bit hold none and are skipped.
 */
static int
fc_chunk_has_changes(FcCkptRun *run, const FcCkptJob *job, uint64 lo, uint64 hi)
{
	uint64		spp = job->tbl->slots_per_page;
	int			found = 0;

	LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_SHARED);
	if (!fc_job_alive(job))
		found = -1;
	for (uint64 s = lo; found == 0 && s < hi;)
	{
		uint64		page = s / spp;
		uint64		end = Min((page + 1) * spp, hi);
		bool		marked;
		bool		whole;
		uint8	   *m = fc_page_summary(run, job, page, lo, hi, &marked, &whole);

		for (; marked && found == 0 && s < end; s++)
			if (fc_pp_previous_settle(&fc_slot_header(job->tbl, s)->marks, run->phase))
				found = 1;
		if (marked && found == 0 && whole)
			fc_page_summary_clear(run, m);
		s = end;
	}
	LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
	return found;
}

/*
 * Walk the slots of chunk chunkno, taking each marked previous-phase
 * image, into the open file.  With base (a whole file), every slot's row:
 * the image taken, else the last checkpoint's row.  Without (a delta), only
 * what changed: the images taken, and a tombstone for a deleted row the
 * last checkpoint had.  run->memo says which slots hold a row afterwards.
 * False if the table went away meanwhile.
 */
static bool
fc_chunk_walk(FcCkptRun *run, const FcCkptJob *job, uint32 chunkno, FcLayers *base)
{
	uint64		lo = (uint64) chunkno * FC_CKPT_CHUNK_SLOTS;
	uint64		hi = Min(lo + FC_CKPT_CHUNK_SLOTS, job->tab.nslots);
	uint64		spp = job->tbl->slots_per_page;
	FcChunkMemo *memo = run->memo;
	uint64		s = lo;
	bool		alive = true;

	while (s < hi && alive)
	{
		/* a group ends on a page boundary: pages are walked whole */
		uint64		group_end = Min((s + FC_CKPT_GROUP_SLOTS + spp - 1) / spp * spp, hi);

		LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_SHARED);
		alive = fc_job_alive(job);
		while (alive && s < group_end)
		{
			uint64		page = s / spp;
			uint64		end = Min((page + 1) * spp, group_end);
			bool		marked;
			bool		whole;
			bool		took = false;
			uint8	   *m = fc_page_summary(run, job, page, lo, hi, &marked, &whole);

			/* a delta needs nothing from a page without marks */
			if (!marked && base == NULL)
				s = end;
			for (; s < end; s++)
			{
				uint32		off = (uint32) (s - lo);
				const char *image;
				uint32		len;
				const char *old_image;
				uint32		old_len;
				int			state = FC_PP_CLEAN;

				if (marked)
				{
					char	   *sp = fc_slot_ptr(job->tbl, s);

					state = fc_pp_take_previous(&((FcSlotHeader *) sp)->marks, sp,
												&job->tbl->layout, run->phase,
												&image, &len);
				}
				if (state != FC_PP_CLEAN)
				{
					run->dirty_rows++;
					took = true;
				}
				if (base != NULL)
				{
					if (fc_layers_get(base, off, &old_image, &old_len) &&
						state == FC_PP_CLEAN)
					{
						state = FC_PP_DIRTY;
						image = old_image;
						len = old_len;
					}
				}
				else if (state == FC_PP_TOMBSTONE && fc_memo_has(memo->present, off))
					fc_chunk_emit(run, off, NULL, FC_CKPT_TOMBSTONE);
				if (state == FC_PP_DIRTY)
					fc_chunk_emit(run, off, image, len);
				if (state == FC_PP_DIRTY && !fc_memo_has(memo->present, off))
				{
					fc_memo_mark(memo->present, off, true);
					memo->live++;
				}
				else if (state == FC_PP_TOMBSTONE && fc_memo_has(memo->present, off))
				{
					fc_memo_mark(memo->present, off, false);
					memo->live--;
				}
			}
			/* every mark of the page is clean now: skip it until an install */
			if (marked && !took && whole)
				fc_page_summary_clear(run, m);
		}
		LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
		fc_worker_check_interrupts();
	}
	return alive;
}

/*
 * Write chunk chunkno of a table whole: merge the previous images of its
 * slots with the last checkpoint's rows.  False if the table went away
 * meanwhile (dropped by a transaction with CSN >= S, whose record replay
 * applies).
 */
static bool
fc_chunk_write(FcCkptRun *run, const FcCkptJob *job, uint32 chunkno,
			   const fc_ckpt_table *base_tab, fc_ckpt_chunk *entry)
{
	FcLayers   *base = palloc(sizeof(FcLayers));
	bool		alive;

	fc_layers_open(base, run->ctl.refs[0].seq, base_tab, chunkno,
				   base_tab ? fc_memo_find(&fc_memos_installed, base_tab, chunkno) : NULL);
	run->memo = fc_memo_enter(&fc_memos_building, &job->tab, chunkno);
	fc_chunk_file_begin(run, job, chunkno, 0);
	alive = fc_chunk_walk(run, job, chunkno, base);
	fc_layers_close(base);
	pfree(base);
	entry->crc = fc_chunk_file_end(run, alive);
	if (!alive)
		return false;

	entry->chunkno = chunkno;
	entry->bytes = run->file_bytes;
	entry->base_rows = run->records;
	entry->rows = run->memo->live;
	entry->ndeltas = 0;
	run->memo->nlayers = 1;
	if (run->keep_copy)
		fc_copy_hand_over(run->memo, 0);
	return true;
}

/*
 * Link the last checkpoint's files of a chunk into the new checkpoint, and
 * start the chunk's memo from the last one's (taking over its copy bytes),
 * or with need_memo, when there is none, from the files.  False if a link
 * failed (the links made are removed).
 */
static bool
fc_chunk_link(FcCkptRun *run, const FcCkptJob *job, const fc_ckpt_table *base_tab,
			  uint32 chunkno, bool need_memo, StringInfo deltas, fc_ckpt_chunk *entry)
{
	const fc_ckpt_chunk *old = &fc_ckpt_table_chunks(base_tab)[chunkno];
	const fc_ckpt_delta *old_deltas = fc_ckpt_table_deltas(base_tab) + old->first_delta;
	FcChunkMemo *prev = fc_memo_find(&fc_memos_installed, base_tab, chunkno);
	uint32		k;

	for (k = 0; k <= old->ndeltas; k++)
	{
		char	   *from = fc_ckpt_chunk_path(run->ctl.refs[0].seq, base_tab, chunkno, k);
		char	   *to = fc_ckpt_chunk_path(run->seq, &job->tab, chunkno, k);
		bool		ok = (link(from, to) == 0);

		pfree(from);
		pfree(to);
		if (!ok)
			break;
	}
	if (k <= old->ndeltas)
	{
		while (k-- > 0)
		{
			char	   *to = fc_ckpt_chunk_path(run->seq, &job->tab, chunkno, k);

			(void) unlink(to);
			pfree(to);
		}
		return false;
	}

	*entry = *old;
	entry->first_delta = (uint32) (deltas->len / sizeof(fc_ckpt_delta));
	appendBinaryStringInfo(deltas, (const char *) old_deltas,
						   sizeof(fc_ckpt_delta) * old->ndeltas);
	run->bytes_reused += old->bytes;
	for (k = 0; k < old->ndeltas; k++)
		run->bytes_reused += old_deltas[k].bytes;

	run->memo = NULL;
	if (prev != NULL && prev->nlayers == old->ndeltas + 1)
	{
		FcChunkMemo *memo = fc_memo_enter(&fc_memos_building, &job->tab, chunkno);

		memcpy(memo->present, prev->present, FC_CKPT_PRESENT_BYTES);
		memo->live = prev->live;
		memo->nlayers = prev->nlayers;
		if (run->keep_copy)
		{
			/* moved, not copied: a failed checkpoint reads the files again */
			memcpy(memo->data, prev->data, sizeof(memo->data));
			memcpy(memo->len, prev->len, sizeof(memo->len));
			memset(prev->data, 0, sizeof(prev->data));
		}
		run->memo = memo;
	}
	else if (need_memo)
	{
		run->memo = fc_memo_enter(&fc_memos_building, &job->tab, chunkno);
		fc_memo_rebuild(run->memo, run->ctl.refs[0].seq, base_tab, chunkno);
	}
	return true;
}

/*
 * Deltas a chunk may have: rewriting it whole opens all its files at once,
 * within PostgreSQL's budget of transient files (a third of max_safe_fds),
 * with room for the file being written and a few more.
 */
static uint32
fc_max_deltas(void)
{
	int			budget = max_safe_fds / 3 - 4;

	return (uint32) Max(Min(budget - 1, FC_CKPT_MAX_DELTAS), 0);
}

/*
 * Should a changed chunk get a delta rather than be written whole?  When
 * its deltas so far stay below checkpoint_delta_ratio of its whole file
 * and it has room for one more.  The chunk's
 * share of the ratio, between half and all of it, staggers the chunks'
 * whole rewrites, which a uniform load would otherwise bring due together.
 */
static bool
fc_chunk_wants_delta(const fc_ckpt_table *base_tab, uint32 chunkno)
{
	const fc_ckpt_chunk *old;
	const fc_ckpt_delta *deltas;
	uint64		delta_bytes = 0;
	uint32		spread;

	if (fc_checkpoint_delta_ratio <= 0 || base_tab == NULL || chunkno >= base_tab->nchunks)
		return false;
	old = &fc_ckpt_table_chunks(base_tab)[chunkno];
	if (old->ndeltas >= fc_max_deltas())
		return false;
	deltas = fc_ckpt_table_deltas(base_tab) + old->first_delta;
	for (uint32 k = 0; k < old->ndeltas; k++)
		delta_bytes += deltas[k].bytes;
	spread = (base_tab->relnode * 2654435761u + chunkno * 40503u) % 1024;
	return (double) delta_bytes <
		fc_checkpoint_delta_ratio * (double) old->bytes * (0.5 + 0.5 * spread / 1023.0);
}

/*
 * Write a delta of chunk chunkno: link the last checkpoint's files of the
 * chunk and add one holding what changed.  1: done; 0: the table went
 * away; -1: the files could not be linked (write the chunk whole).
 */
static int
fc_chunk_write_delta(FcCkptRun *run, const FcCkptJob *job, uint32 chunkno,
					 const fc_ckpt_table *base_tab, StringInfo deltas,
					 fc_ckpt_chunk *entry)
{
	fc_ckpt_delta delta;
	bool		alive;
	bool		keep;

	if (!fc_chunk_link(run, job, base_tab, chunkno, true, deltas, entry))
		return -1;
	Assert(run->memo != NULL);
	fc_chunk_file_begin(run, job, chunkno, entry->ndeltas + 1);
	alive = fc_chunk_walk(run, job, chunkno, NULL);
	keep = alive && run->records > 0;
	delta.crc = fc_chunk_file_end(run, keep);
	if (!alive)
		return 0;
	entry->rows = run->memo->live;
	if (!keep)
		return 1;				/* only changes that cancel out */

	delta.records = (uint32) run->records;
	delta.bytes = run->file_bytes;
	appendBinaryStringInfo(deltas, (const char *) &delta, sizeof(delta));
	entry->ndeltas++;
	run->memo->nlayers++;
	if (run->keep_copy)
		fc_copy_hand_over(run->memo, entry->ndeltas);
	run->deltas_written++;
	return 1;
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
	StringInfoData deltas;
	bool		alive = true;
	uint32		c;

	initStringInfo(&deltas);
	for (c = 0; c < nchunks && alive; c++)
	{
		uint64		lo = (uint64) c * FC_CKPT_CHUNK_SLOTS;
		int			changes = 1;
		int			done = -1;

		/* only a chunk the last checkpoint has can be reused */
		if (base_tab != NULL && c < base_tab->nchunks)
			changes = fc_chunk_has_changes(run, job, lo,
										   Min(lo + FC_CKPT_CHUNK_SLOTS, job->tab.nslots));
		if (changes < 0)
			done = 0;
		else if (changes == 0)
			done = fc_chunk_link(run, job, base_tab, c, false, &deltas, &chunks[c]) ? 1 : -1;
		else if (fc_chunk_wants_delta(base_tab, c))
			done = fc_chunk_write_delta(run, job, c, base_tab, &deltas, &chunks[c]);
		if (done < 0)
		{
			chunks[c].first_delta = (uint32) (deltas.len / sizeof(fc_ckpt_delta));
			done = fc_chunk_write(run, job, c, base_tab, &chunks[c]) ? 1 : 0;
		}
		alive = (done > 0);
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
			for (uint32 layer = 0; layer <= FC_CKPT_MAX_DELTAS; layer++)
			{
				char	   *path = fc_ckpt_chunk_path(run->seq, &job->tab, k, layer);

				(void) unlink(path);
				pfree(path);
			}
		pfree(deltas.data);
		pfree(chunks);
		return;
	}
	job->tab.nchunks = nchunks;
	job->tab.ndeltas = (uint32) (deltas.len / sizeof(fc_ckpt_delta));
	job->tab.rows = 0;
	job->tab.bytes = 0;
	for (uint32 k = 0; k < nchunks; k++)
	{
		job->tab.rows += chunks[k].rows;
		job->tab.bytes += chunks[k].bytes;
	}
	for (uint32 k = 0; k < job->tab.ndeltas; k++)
		job->tab.bytes += ((fc_ckpt_delta *) deltas.data)[k].bytes;
	appendBinaryStringInfo(&run->manifest, (const char *) &job->tab, sizeof(fc_ckpt_table));
	appendBinaryStringInfo(&run->manifest, (const char *) chunks, sizeof(fc_ckpt_chunk) * nchunks);
	appendBinaryStringInfo(&run->manifest, deltas.data, deltas.len);
	run->ntables++;
	run->nchunks += nchunks;
	run->rows += job->tab.rows;
	run->bytes += job->tab.bytes;

	LWLockAcquire(fc_misc_lock(FC_LOCK_DIRECTORY), LW_SHARED);
	if (fc_job_alive(job))
		job->tbl->ckpt_bytes = job->tab.bytes;
	LWLockRelease(fc_misc_lock(FC_LOCK_DIRECTORY));
	pfree(deltas.data);
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
	st->last_deltas_written = o->run->deltas_written;
	st->bytes_written += o->run->bytes_written;
	st->deltas_written += o->run->deltas_written;
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
					 errmsg("the fastckpt checkpoint control file cannot be used: %s", problem),
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

	/* a failed attempt's memos went with it (fc_ckpt_abandon_copy) */
	/*
	 * The memos describe the checkpoint this process installed last.  If
	 * the installed one is another (the control file was renamed but the
	 * attempt failed after it), the files are the truth.
	 */
	if (!have_ctl || run.ctl.nrefs == 0 || run.ctl.refs[0].seq != fc_memos_installed_seq)
		fc_memo_set_destroy(&fc_memos_installed);
	run.keep_copy = (fc_checkpoint_method == FC_CKPT_COPY);
	fc_copy_drop();
	fc_memo_set_destroy(&fc_memos_building);
	fc_memo_set_create(&fc_memos_building);
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
	m->bytes = run.bytes;
	m->finished_at = GetCurrentTimestamp();
	fc_ckpt_manifest_seal(run.manifest.data);
	{
		char	   *mpath = fc_ckpt_manifest_path(run.seq);

		fc_ckpt_write_file(mpath, run.manifest.data, run.manifest.len);
		pfree(mpath);
	}
	fc_fsync_dir_or_error(dir);
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

	/* the memos (and the copy variant's bytes) now describe this checkpoint */
	fc_memo_set_destroy(&fc_memos_installed);
	fc_memos_installed = fc_memos_building;
	fc_memos_installed_seq = run.seq;
	memset(&fc_memos_building, 0, sizeof(fc_memos_building));

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
			(errmsg("pg_fastckpt: checkpoint %llu at CSN %llu written in %.3f s: %llu tables, %llu rows, %llu bytes written (%llu chunk deltas), %llu reused, %llu log segments removed",
					(unsigned long long) run.seq, (unsigned long long) run.csn,
					(double) (outcome.finished_at - outcome.started_at) / 1000000.0,
					(unsigned long long) run.ntables, (unsigned long long) run.rows,
					(unsigned long long) run.bytes_written,
					(unsigned long long) run.deltas_written,
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
 * After a failed attempt: drop the memos being built.  The installed
 * checkpoint's stay (less the copy bytes moved to the failed attempt's):
 * it is still the base of the next attempt.
 */
void
fc_ckpt_abandon_copy(void)
{
	fc_copy_drop();
	fc_memo_set_destroy(&fc_memos_building);
}
