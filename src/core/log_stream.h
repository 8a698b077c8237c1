/*-------------------------------------------------------------------------
 *
 * log_stream.h
 *	  Reading the log back: the byte stream across segment files, and its
 *	  valid records one after another.
 *
 * The caller supplies the bytes of one segment at a time (recovery through
 * PostgreSQL's file routines, the offline verifier through plain POSIX);
 * this walks them.  The walk stops at the first position that does not
 * hold a valid record (torn, zeroed, stale or corrupt): everything after
 * it is the unacknowledged tail of a crash, or damage.
 *
 * Pure C: no PostgreSQL headers, so recovery and pg_fastckpt_verify read
 * the log with the same code.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_LOG_STREAM_H
#define FC_LOG_STREAM_H

#include <stdint.h>

#include "core/log_format.h"

/* Bytes read per call, and the buffer a stream needs. */
#define FC_LOG_STREAM_CHUNK		(4 * 1024 * 1024)
#define FC_LOG_STREAM_BUFFER	(FC_LOG_STREAM_CHUNK + FC_LOG_MAX_RECORD)

/*
 * Read up to len bytes of the segment starting at segstart, from offset on
 * (offset + len never passes the segment's end).  Returns the bytes read:
 * fewer than len where the segment's data ends, 0 for a missing segment.
 */
typedef uint64_t (*fc_log_read_fn) (void *arg, uint64_t segstart,
									uint64_t offset, char *dst, uint64_t len);

typedef struct fc_log_stream
{
	fc_log_read_fn read;
	void	   *arg;
	uint64_t	pos;			/* next record */
	int			at_end;			/* pos holds no valid record */
	char	   *chunk;			/* bytes [chunk_lsn, chunk_lsn + chunk_len) */
	uint64_t	chunk_lsn;
	uint64_t	chunk_len;
} fc_log_stream;

/* buffer: FC_LOG_STREAM_BUFFER bytes, the caller's, kept until the end */
extern void fc_log_stream_init(fc_log_stream *s, char *buffer,
							   fc_log_read_fn read, void *arg, uint64_t start_lsn);

/* The next valid record, or NULL at the end; valid until the next call. */
extern const fc_log_header *fc_log_stream_next(fc_log_stream *s);

/* The record at lsn if a valid one is there, else NULL. */
extern const fc_log_header *fc_log_stream_record_at(fc_log_stream *s, uint64_t lsn);

/* Read the record at lsn next (a position a record was read from). */
extern void fc_log_stream_seek(fc_log_stream *s, uint64_t lsn);

/*
 * Make at least len (at most FC_LOG_MAX_RECORD) bytes from lsn available
 * at s->chunk + (lsn - s->chunk_lsn) if the log has them; returns how many
 * bytes from lsn are there.
 */
extern uint64_t fc_log_stream_fill(fc_log_stream *s, uint64_t lsn, uint64_t len);

#endif							/* FC_LOG_STREAM_H */
