/*-------------------------------------------------------------------------
 *
 * verify.h
 *	  pg_fastckpt_verify: offline check of a data directory's fastckpt
 *	  checkpoints, log and prepared transactions' files.
 *
 * Reads only; links the pure-C core (record and block codecs, CRC), so it
 * checks the files with the very code the server wrote and reads them with.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_VERIFY_H
#define FC_VERIFY_H

#include <stdint.h>

typedef struct fc_verify
{
	const char *datadir;
	int			verbose;
	int			problems;		/* damage: recovery would fail or lose data */
	int			warnings;		/* unusual, explained in the message */
} fc_verify;

/* What the checkpoint check tells the log check. */
typedef struct fc_verify_ckpt
{
	int			found;			/* a control file names checkpoints */
	uint64_t	installed_lsn;	/* the installed one's log start */
	uint64_t	oldest_lsn;		/* the oldest named one's log start */
	uint64_t	installed_seq;
	uint64_t	oldest_seq;
} fc_verify_ckpt;

extern void fc_verify_problem(fc_verify *v, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
extern void fc_verify_warning(fc_verify *v, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
extern void fc_verify_info(fc_verify *v, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
extern void fc_verify_detail(fc_verify *v, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
extern char *fc_verify_path(fc_verify *v, const char *fmt,...)
			__attribute__((format(printf, 2, 3)));
extern void *fc_verify_alloc(size_t size);

/* verify_ckpt.c */
extern void fc_verify_checkpoints(fc_verify *v, fc_verify_ckpt *out);

/* verify_log.c */
extern void fc_verify_log(fc_verify *v, const fc_verify_ckpt *ckpt);

/* verify_prepared.c */
extern void fc_verify_prepared(fc_verify *v);

#endif							/* FC_VERIFY_H */
