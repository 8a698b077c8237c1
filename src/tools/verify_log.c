/*-------------------------------------------------------------------------
 *
 * verify_log.c
 *	  pg_fastckpt_verify: the log segments, their records, and what lies
 *	  past the end of the log.
 *
 * Recovery replays from the checkpoint's log position to the first record
 * that does not validate and clears everything after it.  After a crash,
 * bytes past that point are a record cut short and never acknowledged (a
 * commit is acknowledged only once its record is synced).  Valid records
 * further on are different: either the crash lost unsynced writes out of
 * order, or the log is damaged at its end and recovery would drop them.
 * The server's own shutdown state (global/pg_control) tells the two apart
 * when it can: a server that shut down cleanly leaves nothing past the end.
 *
 *-------------------------------------------------------------------------
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file_layout.h"
#include "core/log_format.h"
#include "core/log_stream.h"
#include "tools/verify.h"

/* PostgreSQL's pg_control: its state field, and the one value we need. */
#define FC_PG_CONTROL_PATH		"global/pg_control"
#define FC_PG_CONTROL_STATE_OFF 16	/* after system id, two version words */
#define FC_PG_STATE_SHUTDOWNED	1

/* The segment file a stream reads from. */
typedef struct fc_segment_reader
{
	fc_verify  *v;
	int			fd;
	uint64_t	fd_segstart;
} fc_segment_reader;

typedef struct fc_log_counts
{
	uint64_t	records[FC_REC_KIND_MAX + 1];
	uint64_t	rows;
	uint64_t	bytes;
	uint64_t	min_csn;
	uint64_t	max_csn;
	uint64_t	boundary;		/* the installed checkpoint's position */
	int			boundary_seen;	/* a record starts there, or the log ends */
} fc_log_counts;

static int
fc_cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return x < y ? -1 : x > y;
}

/* Start positions of the segment files, ascending; count in *n. */
static uint64_t *
fc_list_segments(fc_verify *v, int *n)
{
	char	   *path = fc_verify_path(v, FC_LOG_DIR);
	DIR		   *dir = opendir(path);
	struct dirent *de;
	uint64_t   *segs = NULL;
	int			cap = 0;

	*n = 0;
	if (dir == NULL)
	{
		if (errno != ENOENT)
			fc_verify_problem(v, "could not open directory \"%s\": %s", path, strerror(errno));
		free(path);
		return NULL;
	}
	while ((de = readdir(dir)) != NULL)
	{
		unsigned long long start;

		if (!fc_is_hex_name(de->d_name))
			continue;
		start = strtoull(de->d_name, NULL, 16);
		if (start % FC_LOG_SEGMENT_SIZE != 0)
		{
			fc_verify_warning(v, "\"%s/%s\" is not a log segment the server would read (not at a segment boundary)",
							  path, de->d_name);
			continue;
		}
		if (*n == cap)
		{
			uint64_t   *more;

			cap = cap == 0 ? 16 : cap * 2;
			more = fc_verify_alloc(sizeof(uint64_t) * cap);
			if (segs != NULL)
				memcpy(more, segs, sizeof(uint64_t) * *n);
			free(segs);
			segs = more;
		}
		segs[(*n)++] = start;
	}
	closedir(dir);
	free(path);
	if (*n > 1)
		qsort(segs, *n, sizeof(uint64_t), fc_cmp_u64);
	return segs;
}

/* fc_log_read_fn: bytes of one segment; a missing one has none. */
static uint64_t
fc_read_segment(void *arg, uint64_t segstart, uint64_t offset, char *dst, uint64_t len)
{
	fc_segment_reader *r = (fc_segment_reader *) arg;
	ssize_t		got;

	if (r->fd < 0 || r->fd_segstart != segstart)
	{
		char	   *path = fc_verify_path(r->v, FC_LOG_DIR "/" FC_HEX_NAME_FMT,
										  (unsigned long long) segstart);

		if (r->fd >= 0)
			close(r->fd);
		r->fd = open(path, O_RDONLY);
		if (r->fd < 0)
		{
			if (errno != ENOENT)
				fc_verify_problem(r->v, "could not open \"%s\": %s", path, strerror(errno));
			free(path);
			return 0;
		}
		r->fd_segstart = segstart;
		free(path);
	}
	got = pread(r->fd, dst, len, (off_t) offset);
	if (got < 0)
	{
		fc_verify_problem(r->v, "could not read the log at position %llu: %s",
						  (unsigned long long) (segstart + offset), strerror(errno));
		return 0;
	}
	return (uint64_t) got;
}

/* Entries of a record that validated: a CRC-valid record the server cannot parse. */
static void
fc_check_entries(fc_verify *v, const fc_log_header *rec, fc_log_counts *counts)
{
	fc_log_cursor cur;
	const char *what = NULL;

	fc_log_cursor_init(&cur, rec);
	if (rec->kind == FC_REC_VALUES)
	{
		const fc_log_row *row;
		const char *image;

		while (fc_log_next_row(&cur, &row, &image))
			counts->rows++;
		if (cur.corrupt || cur.left != 0)
			what = "row entries overrun the record";
	}
	else if (rec->kind == FC_REC_DDL)
	{
		const fc_log_ddl *ddl;

		while (fc_log_next_ddl(&cur, &ddl))
			if (ddl->op < FC_DDL_CREATE || ddl->op > FC_DDL_DROP_DATABASE)
				what = "unknown DDL operation";
		if (cur.corrupt || cur.left != 0)
			what = "DDL entries overrun the record";
	}
	else if (rec->kind == FC_REC_CALL)
	{
		fc_log_call_view view;

		if (!fc_log_call_parse(rec, &view))
			what = "call parts overrun the record";
	}
	if (what != NULL)
		fc_verify_problem(v, "log record at position %llu (CSN %llu) has a valid CRC but %s; recovery %s",
						  (unsigned long long) rec->lsn, (unsigned long long) rec->csn, what,
						  rec->kind == FC_REC_CALL ? "would stop there and keep the tables closed" :
						  "would apply only the entries before the fault");
}

/* Walk valid records from lsn, as recovery does; returns where they end. */
static uint64_t
fc_walk(fc_verify *v, fc_log_stream *s, uint64_t lsn, fc_log_counts *counts)
{
	const fc_log_header *rec;

	fc_log_stream_seek(s, lsn);
	while ((rec = fc_log_stream_next(s)) != NULL)
	{
		if (rec->lsn == counts->boundary)
			counts->boundary_seen = 1;
		counts->records[rec->kind]++;
		counts->bytes += FC_LOG_ALIGNED(rec->len);
		if (counts->min_csn == 0 || rec->csn < counts->min_csn)
			counts->min_csn = rec->csn;
		if (rec->csn > counts->max_csn)
			counts->max_csn = rec->csn;
		fc_check_entries(v, rec, counts);
	}
	if (s->pos == counts->boundary)
		counts->boundary_seen = 1;
	return s->pos;
}

/* PostgreSQL's shutdown state: 1 shut down cleanly, 0 not, -1 unknown. */
static int
fc_pg_shut_down_cleanly(fc_verify *v)
{
	char	   *path = fc_verify_path(v, FC_PG_CONTROL_PATH);
	int			fd = open(path, O_RDONLY);
	int32_t		state;
	int			result = -1;

	free(path);
	if (fd < 0)
		return -1;
	if (pread(fd, &state, sizeof(state), FC_PG_CONTROL_STATE_OFF) == sizeof(state))
		result = state == FC_PG_STATE_SHUTDOWNED;
	close(fd);
	return result;
}

/*
 * What lies past the end of the valid log, up to the end of the last
 * segment: zeros, a cut-short record, or valid records further on.
 */
static void
fc_check_tail(fc_verify *v, fc_log_stream *s, uint64_t end, uint64_t files_end)
{
	uint64_t	nonzero = 0;
	uint64_t	first_nonzero = 0;
	uint64_t	found_at = 0;
	uint64_t	found = 0;
	int			clean;

	for (uint64_t at = end; at < files_end;)
	{
		uint64_t	avail = fc_log_stream_fill(s, at, 1);

		if (avail == 0)
			break;
		for (uint64_t i = 0; i < avail; i++)
			if (s->chunk[at - s->chunk_lsn + i] != 0)
			{
				if (nonzero == 0)
					first_nonzero = at + i;
				nonzero++;
			}
		at += avail;
	}
	if (nonzero == 0)
	{
		fc_verify_info(v, "log: ends at position %llu; zeros after it",
					   (unsigned long long) end);
		return;
	}
	/* a record's first bytes (its CRC) may be zeros: start at its word */
	for (uint64_t at = first_nonzero - first_nonzero % FC_LOG_ALIGN > end ?
		 first_nonzero - first_nonzero % FC_LOG_ALIGN : end + FC_LOG_ALIGN;
		 at < files_end; at += FC_LOG_ALIGN)
	{
		const fc_log_header *rec = fc_log_stream_record_at(s, at);

		if (rec == NULL)
			continue;
		if (found == 0)
			found_at = at;
		found++;
		at += FC_LOG_ALIGNED(rec->len) - FC_LOG_ALIGN;
	}
	clean = fc_pg_shut_down_cleanly(v);
	if (found > 0)
		fc_verify_info(v, "log: ends at position %llu; %llu bytes after it are not zeros, among them valid records",
					   (unsigned long long) end, (unsigned long long) nonzero);
	if (found == 0)
	{
		if (clean == 1)
			fc_verify_problem(v, "log: %llu bytes that are not a valid record follow the end of the log at position %llu, but the server shut down cleanly: the last record is damaged",
							  (unsigned long long) nonzero, (unsigned long long) end);
		else
			fc_verify_info(v, "log: ends at position %llu; %llu bytes after it are a record cut short by a crash (never acknowledged; the next start clears them)",
						   (unsigned long long) end, (unsigned long long) nonzero);
		return;
	}
	if (clean == 1)
		fc_verify_problem(v, "log: damaged at position %llu: %llu valid records follow from position %llu, and recovery would drop them",
						  (unsigned long long) end, (unsigned long long) found,
						  (unsigned long long) found_at);
	else
		fc_verify_warning(v, "log: %llu valid records lie past the end of the log at position %llu, from position %llu: a crash that lost unsynced writes leaves such records (never acknowledged), but so does a log damaged at position %llu, and recovery drops them",
						  (unsigned long long) found, (unsigned long long) end,
						  (unsigned long long) found_at, (unsigned long long) end);
}

void
fc_verify_log(fc_verify *v, const fc_verify_ckpt *ckpt)
{
	int			nsegs;
	uint64_t   *segs = fc_list_segments(v, &nsegs);
	uint64_t	from = ckpt->found ? ckpt->oldest_lsn : 0;
	uint64_t	files_end;
	uint64_t	end;
	fc_segment_reader r;
	fc_log_stream s;
	fc_log_counts counts;

	files_end = nsegs > 0 ? segs[nsegs - 1] + FC_LOG_SEGMENT_SIZE : 0;

	/*
	 * The server keeps the segment holding the installed checkpoint's log
	 * position; only one that would start exactly there may not be made yet.
	 */
	if (ckpt->found && files_end <= ckpt->installed_lsn &&
		ckpt->installed_lsn % FC_LOG_SEGMENT_SIZE != 0)
		fc_verify_problem(v, "no log segment holds position %llu, where the replay after checkpoint %llu starts: the commits that followed it are lost",
						  (unsigned long long) ckpt->installed_lsn,
						  (unsigned long long) ckpt->installed_seq);
	if (nsegs == 0)
	{
		fc_verify_info(v, "log: no segments (nothing to replay)");
		free(segs);
		return;
	}
	for (int i = 0; i < nsegs; i++)
		fc_verify_detail(v, "log segment " FC_HEX_NAME_FMT ": positions %llu to %llu",
						 (unsigned long long) segs[i], (unsigned long long) segs[i],
						 (unsigned long long) (segs[i] + FC_LOG_SEGMENT_SIZE));
	for (int i = 1; i < nsegs; i++)
		if (segs[i] != segs[i - 1] + FC_LOG_SEGMENT_SIZE)
			fc_verify_problem(v, "log segment " FC_HEX_NAME_FMT " is missing: the log jumps from position %llu to %llu",
							  (unsigned long long) (segs[i - 1] + FC_LOG_SEGMENT_SIZE),
							  (unsigned long long) (segs[i - 1] + FC_LOG_SEGMENT_SIZE),
							  (unsigned long long) segs[i]);
	if (!ckpt->found && segs[0] > 0)
		fc_verify_problem(v, "the log starts at position %llu, but no checkpoint holds what came before; the server will not open fastckpt tables",
						  (unsigned long long) segs[0]);
	else if (ckpt->found && segs[0] > ckpt->installed_lsn)
		fc_verify_problem(v, "the log that checkpoint %llu needs from position %llu has been removed (the oldest segment starts at %llu)",
						  (unsigned long long) ckpt->installed_seq,
						  (unsigned long long) ckpt->installed_lsn, (unsigned long long) segs[0]);
	else if (ckpt->found && segs[0] > ckpt->oldest_lsn)
		fc_verify_warning(v, "the log that the previous checkpoint %llu needs from position %llu has been removed: it cannot serve as a fallback",
						  (unsigned long long) ckpt->oldest_seq,
						  (unsigned long long) ckpt->oldest_lsn);
	if (from < segs[0])
		from = segs[0];

	memset(&r, 0, sizeof(r));
	memset(&counts, 0, sizeof(counts));
	r.v = v;
	r.fd = -1;
	fc_log_stream_init(&s, fc_verify_alloc(FC_LOG_STREAM_BUFFER), fc_read_segment, &r, from);
	counts.boundary = ckpt->found ? ckpt->installed_lsn : from;
	end = fc_walk(v, &s, from, &counts);
	if (ckpt->found && end > ckpt->installed_lsn && from <= ckpt->installed_lsn &&
		!counts.boundary_seen)
		fc_verify_problem(v, "log: the installed checkpoint's position %llu falls inside a record: its replay would stop there at once and drop the log after it",
						  (unsigned long long) ckpt->installed_lsn);
	if (ckpt->found && end < ckpt->installed_lsn && from <= ckpt->installed_lsn)
	{
		/* the installed checkpoint replays from its own position on */
		fc_verify_problem(v, "log: damaged at position %llu, before position %llu where the installed checkpoint's replay starts: falling back to checkpoint %llu would lose the commits in between",
						  (unsigned long long) end, (unsigned long long) ckpt->installed_lsn,
						  (unsigned long long) ckpt->oldest_seq);
		end = fc_walk(v, &s, ckpt->installed_lsn, &counts);
	}
	fc_verify_info(v, "log: %d segments; from position %llu to %llu: %llu records (%llu VALUES with %llu rows, %llu CALL, %llu DDL, %llu ABORT), %.1f MB, CSN %llu to %llu",
				   nsegs, (unsigned long long) from, (unsigned long long) end,
				   (unsigned long long) (counts.records[FC_REC_VALUES] + counts.records[FC_REC_CALL] +
										 counts.records[FC_REC_DDL] + counts.records[FC_REC_ABORT]),
				   (unsigned long long) counts.records[FC_REC_VALUES],
				   (unsigned long long) counts.rows,
				   (unsigned long long) counts.records[FC_REC_CALL],
				   (unsigned long long) counts.records[FC_REC_DDL],
				   (unsigned long long) counts.records[FC_REC_ABORT],
				   (double) counts.bytes / (1024.0 * 1024.0),
				   (unsigned long long) counts.min_csn, (unsigned long long) counts.max_csn);
	fc_check_tail(v, &s, end, files_end);
	if (r.fd >= 0)
		close(r.fd);
	free(s.chunk);
	free(segs);
}
