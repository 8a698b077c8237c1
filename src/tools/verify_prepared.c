/*-------------------------------------------------------------------------
 *
 * verify_prepared.c
 *	  pg_fastckpt_verify: the files of prepared transactions.
 *
 * Startup recovery puts the rows of each transaction still prepared back
 * from its file, and keeps every table closed if one cannot be read or
 * fails its check: a damaged file is a problem.  A file whose name is not
 * a full xid is what a PREPARE left that did not finish writing; recovery
 * removes it, so it only warrants a warning.
 *
 *-------------------------------------------------------------------------
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/file_layout.h"
#include "core/prepared_format.h"
#include "tools/verify.h"

/* Read a whole file; NULL (and a problem reported) if it cannot be. */
static char *
fc_read_whole(fc_verify *v, const char *path, size_t *size)
{
	FILE	   *f = fopen(path, "rb");
	struct stat st;
	char	   *data;

	if (f == NULL || fstat(fileno(f), &st) != 0)
	{
		fc_verify_problem(v, "could not read file \"%s\": %s", path, strerror(errno));
		if (f != NULL)
			fclose(f);
		return NULL;
	}
	*size = (size_t) st.st_size;
	data = fc_verify_alloc(*size + 1);
	if (fread(data, 1, *size, f) != *size)
	{
		fc_verify_problem(v, "could not read file \"%s\": %s", path,
						  ferror(f) ? strerror(errno) : "file changed while read");
		fclose(f);
		free(data);
		return NULL;
	}
	fclose(f);
	return data;
}

void
fc_verify_prepared(fc_verify *v)
{
	char	   *dirpath = fc_verify_path(v, FC_PREPARED_DIR);
	DIR		   *dir = opendir(dirpath);
	struct dirent *de;
	int			files = 0;
	uint64_t	slots = 0;
	uint64_t	locks = 0;

	if (dir == NULL)
	{
		if (errno != ENOENT)
			fc_verify_problem(v, "could not open directory \"%s\": %s", dirpath, strerror(errno));
		free(dirpath);
		return;
	}
	while ((de = readdir(dir)) != NULL)
	{
		char	   *path;
		char	   *data;
		size_t		size;
		const char *problem;
		const fc_prepared_header *hdr;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		path = fc_verify_path(v, FC_PREPARED_DIR "/%s", de->d_name);
		if (!fc_is_hex_name(de->d_name))
		{
			fc_verify_warning(v, "file \"%s\" is not a prepared transaction's (a PREPARE that did not finish writing it); recovery removes it",
							  path);
			free(path);
			continue;
		}
		data = fc_read_whole(v, path, &size);
		if (data == NULL)
		{
			free(path);
			continue;
		}
		if ((problem = fc_prepared_check(data, size)) != NULL)
			fc_verify_problem(v, "file \"%s\" of a prepared transaction is damaged: %s; recovery would keep the tables closed",
							  path, problem);
		else
		{
			uint32_t	nlocks = 0;
			fc_prepared_cursor cur;
			const fc_prepared_slot *slot;
			const char *image;

			hdr = (const fc_prepared_header *) data;
			fc_prepared_cursor_init(&cur, hdr);
			while (fc_prepared_next(&cur, &slot, &image))
				nlocks += slot->op == FC_PREP_LOCK;
			if (strtoull(de->d_name, NULL, 16) != hdr->fxid)
				fc_verify_problem(v, "file \"%s\" holds the rows of transaction %llu, not of the one it is named after",
								  path, (unsigned long long) hdr->fxid);
			files++;
			slots += hdr->nslots - nlocks;
			locks += nlocks;
			fc_verify_detail(v, "prepared transaction %llu (\"%.*s\") of database %u: %u changed rows, %u locked rows",
							 (unsigned long long) hdr->fxid, FC_PREPARED_GID_SIZE, hdr->gid,
							 hdr->dbid, hdr->nslots - nlocks, nlocks);
		}
		free(data);
		free(path);
	}
	closedir(dir);
	free(dirpath);
	if (files > 0)
		fc_verify_info(v, "%d prepared transaction%s with fastckpt rows: %llu changed rows and %llu locked rows in all",
					   files, files == 1 ? "" : "s", (unsigned long long) slots,
					   (unsigned long long) locks);
}
