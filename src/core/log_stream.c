/*-------------------------------------------------------------------------
 *
 * log_stream.c
 *	  Reading the log back across segment files (see log_stream.h).
 *
 *-------------------------------------------------------------------------
 */
#include "core/log_stream.h"

void
fc_log_stream_init(fc_log_stream *s, char *buffer, fc_log_read_fn read,
				   void *arg, uint64_t start_lsn)
{
	s->read = read;
	s->arg = arg;
	s->pos = start_lsn;
	s->at_end = 0;
	s->chunk = buffer;
	s->chunk_lsn = 0;
	s->chunk_len = 0;
}

/* Read up to len bytes at lsn, across segments; returns bytes read. */
static uint64_t
fc_log_stream_read(fc_log_stream *s, uint64_t lsn, char *dst, uint64_t len)
{
	uint64_t	done = 0;

	while (done < len)
	{
		uint64_t	at = lsn + done;
		uint64_t	segstart = at - at % FC_LOG_SEGMENT_SIZE;
		uint64_t	want = len - done;
		uint64_t	got;

		if (want > segstart + FC_LOG_SEGMENT_SIZE - at)
			want = segstart + FC_LOG_SEGMENT_SIZE - at;
		got = s->read(s->arg, segstart, at - segstart, dst + done, want);
		done += got;
		if (got < want)
			break;				/* that segment's data ends there */
	}
	return done;
}

uint64_t
fc_log_stream_fill(fc_log_stream *s, uint64_t lsn, uint64_t len)
{
	if (lsn >= s->chunk_lsn && lsn + len <= s->chunk_lsn + s->chunk_len)
		return s->chunk_lsn + s->chunk_len - lsn;
	s->chunk_lsn = lsn;
	s->chunk_len = fc_log_stream_read(s, lsn, s->chunk,
									  len > FC_LOG_STREAM_CHUNK ? len : FC_LOG_STREAM_CHUNK);
	return s->chunk_len;
}

const fc_log_header *
fc_log_stream_record_at(fc_log_stream *s, uint64_t lsn)
{
	uint32_t	need = FC_LOG_HEADER_SIZE;

	for (;;)
	{
		uint64_t	avail = fc_log_stream_fill(s, lsn, need);
		const char *p = s->chunk + (lsn - s->chunk_lsn);

		if (avail < need)
			return NULL;
		switch (fc_log_validate(p, avail, lsn, FC_LOG_MAX_RECORD, &need))
		{
			case FC_LOG_VALID:
				return (const fc_log_header *) p;
			case FC_LOG_SHORT:
				continue;		/* read the whole record */
			case FC_LOG_INVALID:
				return NULL;
		}
	}
}

const fc_log_header *
fc_log_stream_next(fc_log_stream *s)
{
	const fc_log_header *rec;

	if (s->at_end)
		return NULL;
	rec = fc_log_stream_record_at(s, s->pos);
	if (rec == NULL)
	{
		s->at_end = 1;
		return NULL;
	}
	s->pos += FC_LOG_ALIGNED(rec->len);
	return rec;
}

void
fc_log_stream_seek(fc_log_stream *s, uint64_t lsn)
{
	s->pos = lsn;
	s->at_end = 0;
}
