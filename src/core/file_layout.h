/*-------------------------------------------------------------------------
 *
 * file_layout.h
 *	  Where pg_fastckpt's files live under the data directory, and how
 *	  they are named.
 *
 *	  pg_fastckpt/timeline					PostgreSQL's timeline the files
 *										were written on
 *	  pg_fastckpt/log/<start>				a log segment (16 hex digits: the
 *										log position it starts at)
 *	  pg_fastckpt/ckpt/control				names the installed checkpoints
 *	  pg_fastckpt/ckpt/<seq>/manifest		tables, chunks, CRCs
 *	  pg_fastckpt/ckpt/<seq>/<db>_<tablespace>_<relfilenode>_<chunk>
 *	  pg_fastckpt/ckpt/<seq>/<db>_<tablespace>_<relfilenode>_<chunk>.d<k>
 *	  pg_fastckpt/prepared/<fxid>			a prepared transaction's rows (16
 *										hex digits: its full xid)
 *	  pg_fastckpt/recovery_attempt			startup recovery under way, and
 *	  pg_fastckpt/call_replay_attempt_<db>	a database's calls being replayed
 *										(recovery/attempts.c)
 *
 * Pure C: the server and the offline verifier (src/tools) name files
 * through these, so the two cannot drift apart.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_FILE_LAYOUT_H
#define FC_FILE_LAYOUT_H

#include <string.h>

#define FC_DIR					"pg_fastckpt"
#define FC_LOG_DIR				FC_DIR "/log"
#define FC_CKPT_DIR				FC_DIR "/ckpt"
#define FC_CKPT_CONTROL			FC_CKPT_DIR "/control"
#define FC_SYNC_TRACE_PATH		FC_DIR "/sync_trace"
#define FC_TIMELINE_PATH		FC_DIR "/timeline"
#define FC_PREPARED_DIR			FC_DIR "/prepared"
#define FC_REPLAY_ATTEMPT_PATH	FC_DIR "/call_replay_attempt"
#define FC_RECOVERY_ATTEMPT_PATH	FC_DIR "/recovery_attempt"

/* A log segment or checkpoint directory name: 16 upper-case hex digits. */
#define FC_HEX_NAME_LEN			16
#define FC_HEX_NAME_CHARS		"0123456789ABCDEF"
#define FC_HEX_NAME_FMT			"%016llX"

/* Is a directory entry's name one of those (and not a leftover)? */
static inline int
fc_is_hex_name(const char *name)
{
	return strlen(name) == FC_HEX_NAME_LEN &&
		strspn(name, FC_HEX_NAME_CHARS) == FC_HEX_NAME_LEN;
}

/* Under a checkpoint directory (each takes a printf argument list). */
#define FC_CKPT_MANIFEST_NAME	"manifest"
#define FC_CKPT_CHUNK_FMT		"%u_%u_%u_%u"	/* db, tablespace, relfilenode,
												 * chunk */
#define FC_CKPT_DELTA_FMT		FC_CKPT_CHUNK_FMT ".d%u"	/* ..., layer */

#endif							/* FC_FILE_LAYOUT_H */
