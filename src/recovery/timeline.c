/*-------------------------------------------------------------------------
 *
 * timeline.c
 *	  Which PostgreSQL timeline pg_fastckpt's files belong to.
 *
 * pg_fastckpt's log and checkpoints are not in PostgreSQL's WAL, so
 * neither streaming replication nor archive recovery carries them.  A
 * standby holds them as the base backup it was made from copied them; so
 * does a server restored to a point in time.  When such a server is
 * promoted (or ends archive recovery) PostgreSQL moves to a new timeline
 * while those files are older than its catalogs: opening them would give
 * silently stale tables, with the fastckpt half of later transactions
 * missing.  So the timeline the files were last opened on is kept next to
 * them, and startup recovery keeps the tables closed when it differs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <unistd.h>

#include "access/xlog.h"
#include "storage/fd.h"

#include "pg_fastckpt.h"
#include "ckpt/checkpoint.h"
#include "core/file_layout.h"
#include "recovery/timeline.h"

/*
 * Do the files belong to the current timeline?  True when they do, or
 * when no timeline was written yet (a new data directory, an earlier
 * build, or pg_fastckpt/ moved aside); else false, with why in error.
 */
bool
fc_timeline_matches(char *error, size_t errlen)
{
	size_t		len;
	char	   *text = fc_ckpt_read_whole(FC_TIMELINE_PATH, &len);
	unsigned int written;
	TimeLineID	current = GetWALInsertionTimeLine();

	if (text == NULL)
		return true;
	text = repalloc(text, len + 1);
	text[len] = '\0';
	if (sscanf(text, "%u", &written) != 1)
	{
		snprintf(error, errlen, "the file \"%s\" does not hold a timeline", FC_TIMELINE_PATH);
		return false;
	}
	if (written == current)
		return true;
	snprintf(error, errlen,
			 "pg_fastckpt's files were written on PostgreSQL timeline %u, and this server runs on timeline %u: "
			 "it was promoted from a standby, or restored to a point in time, and pg_fastckpt's tables are not "
			 "replicated or archived, so its files are older than the rest of the database",
			 written, current);
	return false;
}

/*
 * The files belong to the current timeline from now on.  A failure only
 * warns: the tables open all the same, and a later promotion would then
 * go unnoticed, as before this file existed.
 */
void
fc_timeline_remember(void)
{
	const char *tmp = FC_TIMELINE_PATH ".tmp";
	char		text[32];
	int			len;
	int			fd;
	bool		ok;

	len = snprintf(text, sizeof(text), "%u\n", GetWALInsertionTimeLine());
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	ok = (fd >= 0 && write(fd, text, len) == len && pg_fsync(fd) == 0);
	if (fd >= 0 && CloseTransientFile(fd) != 0)
		ok = false;
	if (!ok || durable_rename(tmp, FC_TIMELINE_PATH, WARNING) != 0)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("pg_fastckpt: could not write \"%s\": %m", FC_TIMELINE_PATH),
				 errdetail("A promotion of this server's standbys would not keep their stale fastckpt tables closed.")));
}
