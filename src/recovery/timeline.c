/*-------------------------------------------------------------------------
 *
 * timeline.c
 *	  Whether pg_fastckpt's files belong to the rest of the database.
 *
 * pg_fastckpt's log and checkpoints are not in PostgreSQL's WAL, so
 * neither streaming replication nor archive recovery carries them: a
 * standby, or a server restored from a base backup, holds them as the
 * backup copied them, while WAL replay brings the rest of the database
 * further.  Opening them would give silently stale tables, with the
 * fastckpt half of later transactions missing.  Two marks of such a server
 * are kept next to the files when they are opened, and startup recovery
 * keeps the tables closed when either differs:
 *
 *	- the timeline: promotion and the end of archive recovery start a new
 *	  one;
 *	- the base backup the data directory was restored from, as PostgreSQL
 *	  leaves it in backup_label.old: a restore without archive recovery
 *	  keeps the timeline.
 *
 * Removing the file accepts the files as they are.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "access/xlog.h"
#include "storage/fd.h"

#include "pg_fastckpt.h"
#include "core/file_layout.h"
#include "recovery/timeline.h"

#define FC_ORIGIN_TIMELINE	"timeline "
#define FC_ORIGIN_BACKUP	"backup "
#define FC_NO_BACKUP		"none"

/*
 * Read a small file into buf (NUL-terminated).  1 when read, 0 when it does
 * not exist, -1 (with why in error) when it cannot be read.
 */
static int
fc_read_small(const char *path, char *buf, size_t size, char *error, size_t errlen)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	ssize_t		got;

	if (fd < 0)
	{
		if (errno == ENOENT)
			return 0;
		snprintf(error, errlen, "could not open \"%s\": %m", path);
		return -1;
	}
	got = read(fd, buf, size - 1);
	if (got < 0)
		snprintf(error, errlen, "could not read \"%s\": %m", path);
	CloseTransientFile(fd);
	if (got < 0)
		return -1;
	buf[got] = '\0';
	return 1;
}

/*
 * Where the base backup this data directory was restored from started
 * ("none" if it was not), from PostgreSQL's backup_label.old.
 */
static void
fc_restored_backup(char *start, size_t size)
{
	char		label[1024];
	char		error[256];
	const char *line;

	strlcpy(start, FC_NO_BACKUP, size);
	switch (fc_read_small(BACKUP_LABEL_OLD, label, sizeof(label), error, sizeof(error)))
	{
		case 0:
			return;
		case -1:
			ereport(LOG, (errmsg("pg_fastckpt: %s", error)));
			return;
	}
	line = strstr(label, "START WAL LOCATION: ");
	if (line != NULL)
		sscanf(line, "START WAL LOCATION: %63s", start);

	/*
	 * The start location alone does not tell backups apart: pg_rewind
	 * writes a label whose start is the redo pointer of the last common
	 * checkpoint, which is also where a base backup taken right after that
	 * checkpoint started.  Add the label's start time ("@", spaces as
	 * underscores), which differs.
	 */
	line = strstr(label, "START TIME: ");
	if (line != NULL && strcmp(start, FC_NO_BACKUP) != 0)
	{
		size_t		len = strlen(start);
		const char *p = line + strlen("START TIME: ");

		if (len + 1 < size)
		{
			start[len++] = '@';
			while (*p != '\0' && *p != '\n' && len + 1 < size)
			{
				start[len++] = (*p == ' ') ? '_' : *p;
				p++;
			}
			start[len] = '\0';
		}
	}
}

/*
 * Same backup?  A file noted by an earlier build has only the start
 * location: compare that much.
 */
static bool
fc_same_backup(const char *current, const char *noted)
{
	const char *at = strchr(current, '@');

	if (strchr(noted, '@') == NULL && at != NULL)
		return strlen(noted) == (size_t) (at - current) &&
			strncmp(current, noted, at - current) == 0;
	return strcmp(current, noted) == 0;
}

/*
 * Do the files belong to the rest of the database?  True when they do, or
 * when nothing was noted yet (a new data directory, an earlier build,
 * pg_fastckpt/ moved aside); else false, with why in error.
 */
bool
fc_timeline_matches(char *error, size_t errlen)
{
	char		text[256];
	char		backup[128];
	char		noted_backup[128];
	const char *p;
	char	   *end = text;
	unsigned long noted;
	TimeLineID	current = GetWALInsertionTimeLine();
	int			rc = fc_read_small(FC_TIMELINE_PATH, text, sizeof(text), error, errlen);

	if (rc <= 0)
		return rc == 0;
	p = strstr(text, FC_ORIGIN_TIMELINE);
	noted = p ? strtoul(p + strlen(FC_ORIGIN_TIMELINE), &end, 10) : 0;
	p = strstr(text, FC_ORIGIN_BACKUP);
	if (noted == 0 || noted > PG_UINT32_MAX || *end != '\n' || p == NULL ||
		sscanf(p + strlen(FC_ORIGIN_BACKUP), "%127s", noted_backup) != 1)
	{
		snprintf(error, errlen, "\"%s\" is damaged; remove it to open the tables as pg_fastckpt's files hold them",
				 FC_TIMELINE_PATH);
		return false;
	}
	if (noted != current)
	{
		snprintf(error, errlen,
				 "pg_fastckpt's files are of PostgreSQL timeline %lu, the server runs on timeline %u (promoted, or restored): "
				 "they are older than the rest of the database",
				 noted, current);
		return false;
	}
	fc_restored_backup(backup, sizeof(backup));
	if (strcmp(backup, FC_NO_BACKUP) != 0 && !fc_same_backup(backup, noted_backup))
	{
		snprintf(error, errlen,
				 "the data directory was restored from a base backup (started at %.*s) since pg_fastckpt's files were opened: "
				 "they need not match the rest of the database",
				 (int) strcspn(backup, "@"), backup);
		return false;
	}
	return true;
}

/*
 * The files belong to the database as it is now.  A failure only warns:
 * the tables open all the same, and a later promotion or restore would
 * then go unnoticed, as before this file existed.
 */
void
fc_timeline_remember(void)
{
	const char *tmp = FC_TIMELINE_PATH ".tmp";
	char		backup[128];
	char		text[256];
	int			len;
	int			fd;
	bool		ok;

	fc_restored_backup(backup, sizeof(backup));
	len = snprintf(text, sizeof(text), FC_ORIGIN_TIMELINE "%u\n" FC_ORIGIN_BACKUP "%s\n",
				   GetWALInsertionTimeLine(), backup);
	errno = 0;
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	ok = (fd >= 0 && write(fd, text, len) == len && pg_fsync(fd) == 0);
	if (!ok && errno == 0)
		errno = ENOSPC;			/* a short write */
	if (fd >= 0)
	{
		int			save_errno = errno;

		if (CloseTransientFile(fd) != 0 && ok)
			ok = false;
		else
			errno = save_errno;
	}
	if (!ok)
	{
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("pg_fastckpt: could not write \"%s\": %m", tmp),
				 errdetail("A promotion or restore of this data directory would not keep stale fastckpt tables closed.")));
		(void) unlink(tmp);
	}
	else
		(void) durable_rename(tmp, FC_TIMELINE_PATH, WARNING);
}

/*
 * No table uses the files (startup.c counted none in any database's
 * catalogs): move the log and the checkpoints aside, under
 * pg_fastckpt/set_aside_<epoch seconds>/, so that recovery starts empty
 * instead of replaying stale calls.  Kept for inspection, not read again.
 * A crash halfway leaves the mismatch, and the next start moves the rest.
 */
bool
fc_timeline_set_aside(char *where, size_t wherelen, char *error, size_t errlen)
{
	const char *const moved[] = {FC_LOG_DIR, FC_CKPT_DIR};
	const char *const names[] = {"log", "ckpt"};

	snprintf(where, wherelen, FC_DIR "/set_aside_%lld", (long long) time(NULL));
	if (MakePGDirectory(where) < 0 && errno != EEXIST)
	{
		snprintf(error, errlen, "could not create directory \"%s\": %m", where);
		return false;
	}
	for (int i = 0; i < lengthof(moved); i++)
	{
		char		to[MAXPGPATH];

		snprintf(to, sizeof(to), "%s/%s", where, names[i]);
		if (rename(moved[i], to) != 0 && errno != ENOENT)
		{
			snprintf(error, errlen, "could not move \"%s\" to \"%s\": %m", moved[i], to);
			return false;
		}
	}
	if (fc_fsync_dir(where) != 0 || fc_fsync_dir(FC_DIR) != 0)
	{
		snprintf(error, errlen, "could not fsync directory \"%s\" or \"%s\": %m", where, FC_DIR);
		return false;
	}
	return true;
}
