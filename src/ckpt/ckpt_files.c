/*-------------------------------------------------------------------------
 *
 * ckpt_files.c
 *	  Checkpoint files (named as core/file_layout.h says), the control file
 *	  and manifests.
 *
 * A checkpoint directory not named by the control file is a leftover of
 * an interrupted or superseded checkpoint and is removed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_perm.h"
#include "pgstat.h"
#include "storage/fd.h"

#include "ckpt/checkpoint.h"
#include "core/file_layout.h"
#include "pg_fastckpt.h"

void
fc_ckpt_ensure_dirs(void)
{
	if (MakePGDirectory(FC_DIR) < 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", FC_DIR)));
	if (MakePGDirectory(FC_CKPT_DIR) < 0 && errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create directory \"%s\": %m", FC_CKPT_DIR)));
}

/* Has a checkpoint ever been written here (any entry under ckpt/)? */
bool
fc_ckpt_dir_has_entries(void)
{
	DIR		   *dir = AllocateDir(FC_CKPT_DIR);
	struct dirent *de;
	bool		any = false;

	while (!any && (de = ReadDir(dir, FC_CKPT_DIR)) != NULL)
		any = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	FreeDir(dir);
	return any;
}

char *
fc_ckpt_dir_path(uint64 seq)
{
	return psprintf(FC_CKPT_DIR "/" FC_HEX_NAME_FMT, (unsigned long long) seq);
}

/* Layer 0 is the whole chunk; layer k its k-th delta, with a suffix. */
char *
fc_ckpt_chunk_path(uint64 seq, const fc_ckpt_table *tab, uint32 chunkno,
				   uint32 layer)
{
	if (layer == 0)
		return psprintf(FC_CKPT_DIR "/" FC_HEX_NAME_FMT "/" FC_CKPT_CHUNK_FMT,
						(unsigned long long) seq,
						tab->dbid, tab->spcid, tab->relnode, chunkno);
	return psprintf(FC_CKPT_DIR "/" FC_HEX_NAME_FMT "/" FC_CKPT_DELTA_FMT,
					(unsigned long long) seq,
					tab->dbid, tab->spcid, tab->relnode, chunkno, layer);
}

char *
fc_ckpt_manifest_path(uint64 seq)
{
	return psprintf(FC_CKPT_DIR "/" FC_HEX_NAME_FMT "/" FC_CKPT_MANIFEST_NAME,
					(unsigned long long) seq);
}

/* Read a whole small file; NULL if it does not exist. */
static char *
fc_ckpt_read_whole(const char *path, size_t *len)
{
	int			fd = OpenTransientFile(path, O_RDONLY | PG_BINARY);
	struct stat st;
	char	   *buf;
	size_t		done = 0;

	if (fd < 0)
	{
		if (errno == ENOENT)
			return NULL;
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", path)));
	}
	if (fstat(fd, &st) < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat file \"%s\": %m", path)));
	buf = palloc_extended(Max(st.st_size, 1), MCXT_ALLOC_HUGE);
	while (done < (size_t) st.st_size)
	{
		ssize_t		got = read(fd, buf + done, st.st_size - done);

		if (got < 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not read file \"%s\": %m", path)));
		if (got == 0)
			break;
		done += got;
	}
	CloseTransientFile(fd);
	*len = done;
	return buf;
}

/* Write a file whole and durably under its final name (temp + rename). */
void
fc_ckpt_write_file(const char *path, const char *data, size_t len)
{
	char	   *tmp = psprintf("%s.tmp", path);
	int			fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	size_t		done = 0;

	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not create file \"%s\": %m", tmp)));
	while (done < len)
	{
		ssize_t		put;

		errno = 0;
		put = write(fd, data + done, len - done);
		if (put <= 0)
		{
			if (errno == 0)
				errno = ENOSPC;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not write file \"%s\": %m", tmp)));
		}
		done += put;
	}
	if (pg_fsync(fd) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not fsync file \"%s\": %m", tmp)));
	CloseTransientFile(fd);
	if (durable_rename(tmp, path, ERROR) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rename \"%s\" to \"%s\": %m", tmp, path)));
	pfree(tmp);
}

/*
 * The control file: 1 if read, 0 if there is none, -1 if it is damaged
 * (*problem says how): then nobody can tell which checkpoint the log
 * continues.
 */
int
fc_ckpt_read_control(fc_ckpt_control *ctl, const char **problem)
{
	size_t		len;
	char	   *buf = fc_ckpt_read_whole(FC_CKPT_CONTROL, &len);

	if (buf == NULL)
		return 0;
	*problem = fc_ckpt_control_check((const fc_ckpt_control *) buf, len);
	if (*problem == NULL)
		memcpy(ctl, buf, sizeof(*ctl));
	pfree(buf);
	return *problem == NULL ? 1 : -1;
}

void
fc_ckpt_write_control(fc_ckpt_control *ctl)
{
	fc_ckpt_control_seal(ctl);
	fc_ckpt_write_file(FC_CKPT_CONTROL, (const char *) ctl, sizeof(*ctl));
}

/*
 * The manifest of a checkpoint the control file names, checked against the
 * control file's CRC and its own; NULL with *error set if unusable.
 */
char *
fc_ckpt_read_manifest(const fc_ckpt_ref *ref, const char **error)
{
	char	   *path = fc_ckpt_manifest_path(ref->seq);
	size_t		len;
	char	   *buf = fc_ckpt_read_whole(path, &len);
	const fc_ckpt_manifest *m;

	pfree(path);
	if (buf == NULL)
	{
		*error = "manifest file missing";
		return NULL;
	}
	*error = fc_ckpt_manifest_check(buf, len);
	m = (const fc_ckpt_manifest *) buf;
	if (*error == NULL &&
		(m->crc != ref->manifest_crc || m->seq != ref->seq || m->csn != ref->csn ||
		 m->start_lsn != ref->start_lsn))
		*error = "manifest does not match the control file";
	if (*error != NULL)
	{
		pfree(buf);
		return NULL;
	}
	return buf;
}

static bool
fc_ckpt_named(const fc_ckpt_control *ctl, uint64 seq)
{
	for (uint32 i = 0; ctl != NULL && i < ctl->nrefs; i++)
		if (ctl->refs[i].seq == seq)
			return true;
	return false;
}

/* Remove checkpoint directories the control file does not name. */
void
fc_ckpt_remove_unnamed(const fc_ckpt_control *ctl)
{
	DIR		   *dir = AllocateDir(FC_CKPT_DIR);
	struct dirent *de;
	bool		removed = false;

	while ((de = ReadDir(dir, FC_CKPT_DIR)) != NULL)
	{
		char	   *path;

		if (fc_is_hex_name(de->d_name))
		{
			if (fc_ckpt_named(ctl, strtoull(de->d_name, NULL, 16)))
				continue;
			path = psprintf(FC_CKPT_DIR "/%s", de->d_name);
			if (!rmtree(path, true))
				ereport(WARNING,
						(errmsg("could not remove old fastckpt checkpoint directory \"%s\"", path)));
			removed = true;
			pfree(path);
		}
		else if (strcmp(de->d_name, "control.tmp") == 0)
		{
			(void) unlink(FC_CKPT_CONTROL ".tmp");
			removed = true;
		}
	}
	FreeDir(dir);
	/* should the removals not last, they are made again next time */
	if (removed && fc_fsync_dir(FC_CKPT_DIR) != 0)
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("could not fsync directory \"%s\": %m", FC_CKPT_DIR)));
}
