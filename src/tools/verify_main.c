/*-------------------------------------------------------------------------
 *
 * verify_main.c
 *	  pg_fastckpt_verify: command line, reporting, exit status.
 *
 *	  pg_fastckpt_verify [-v] [-D DATADIR]
 *
 * Exit status 0: nothing wrong (warnings may have been printed); 1: the
 * files are damaged, so recovery would fall back to an older checkpoint,
 * stop early in the log or refuse to open the tables; 2: could not run.
 * Run it on a stopped server or on a copy of the data directory: a running
 * server writes and removes these files while they are read.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file_layout.h"
#include "tools/verify.h"

static const char *progname = "pg_fastckpt_verify";

/* the extension's version (pg_fastckpt.control) */
#define FC_VERIFY_VERSION	"1.0"

static const struct option fc_verify_options[] = {
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0}
};

static void
fc_verify_vprint(FILE *out, const char *prefix, const char *fmt, va_list ap)
{
	if (prefix != NULL)
		fprintf(out, "%s: %s: ", progname, prefix);
	vfprintf(out, fmt, ap);
	fputc('\n', out);
}

void
fc_verify_problem(fc_verify *v, const char *fmt,...)
{
	va_list		ap;

	v->problems++;
	va_start(ap, fmt);
	fc_verify_vprint(stderr, "error", fmt, ap);
	va_end(ap);
}

void
fc_verify_warning(fc_verify *v, const char *fmt,...)
{
	va_list		ap;

	v->warnings++;
	va_start(ap, fmt);
	fc_verify_vprint(stderr, "warning", fmt, ap);
	va_end(ap);
}

/* One line of the summary. */
void
fc_verify_info(fc_verify *v, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	fc_verify_vprint(stdout, NULL, fmt, ap);
	va_end(ap);
}

/* A line only -v prints (per table, per file). */
void
fc_verify_detail(fc_verify *v, const char *fmt,...)
{
	va_list		ap;

	if (!v->verbose)
		return;
	va_start(ap, fmt);
	fputs("  ", stdout);
	fc_verify_vprint(stdout, NULL, fmt, ap);
	va_end(ap);
}

void *
fc_verify_alloc(size_t size)
{
	void	   *p = malloc(size);

	if (p == NULL)
	{
		fprintf(stderr, "%s: out of memory (%zu bytes)\n", progname, size);
		exit(2);
	}
	return p;
}

/* A path under the data directory (caller frees). */
char *
fc_verify_path(fc_verify *v, const char *fmt,...)
{
	va_list		ap;
	char		rel[1024];
	char	   *path;
	size_t		len;

	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	len = strlen(v->datadir) + 1 + strlen(rel) + 1;
	path = fc_verify_alloc(len);
	snprintf(path, len, "%s/%s", v->datadir, rel);
	return path;
}

static void
fc_verify_usage(FILE *out)
{
	fprintf(out,
			"%s checks a PostgreSQL data directory's pg_fastckpt checkpoints, log\n"
			"and prepared transactions' files.\n\n"
			"Usage:\n  %s [-v] [-D DATADIR]\n\n"
			"Options:\n"
			"  -D DATADIR     data directory (default: $PGDATA)\n"
			"  -v             also list every table, log segment and prepared transaction\n"
			"  -V, --version  show the version, then exit\n"
			"  -h, --help     show this help, then exit\n\n"
			"Exit status: 0 no damage found, 1 damage found, 2 could not run.\n"
			"Run it on a stopped server or on a copy of its data directory.\n",
			progname, progname);
}

int
main(int argc, char **argv)
{
	fc_verify	v;
	fc_verify_ckpt ckpt;
	struct stat st;
	char	   *path;
	int			c;

	memset(&v, 0, sizeof(v));
	v.datadir = getenv("PGDATA");
	while ((c = getopt_long(argc, argv, "D:vVh", fc_verify_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'V':
				printf("%s (pg_fastckpt) %s\n", progname, FC_VERIFY_VERSION);
				return 0;
			case 'D':
				v.datadir = optarg;
				break;
			case 'v':
				v.verbose = 1;
				break;
			case 'h':
				fc_verify_usage(stdout);
				return 0;
			default:
				fc_verify_usage(stderr);
				return 2;
		}
	}
	if (optind < argc || v.datadir == NULL || v.datadir[0] == '\0')
	{
		fprintf(stderr, "%s: %s\n", progname,
				optind < argc ? "too many arguments" :
				"no data directory given: use -D or set PGDATA");
		return 2;
	}
	path = fc_verify_path(&v, FC_DIR);
	errno = 0;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
	{
		fprintf(stderr, "%s: could not use \"%s\": %s\n"
				"Is \"%s\" the data directory of a server that preloads pg_fastckpt?\n",
				progname, path, errno != 0 ? strerror(errno) : "not a directory",
				v.datadir);
		return 2;
	}
	free(path);
	path = fc_verify_path(&v, "postmaster.pid");
	if (stat(path, &st) == 0)
		fc_verify_warning(&v, "\"%s\" exists: if the server is running, files may change while they are read",
						  path);
	free(path);

	fc_verify_checkpoints(&v, &ckpt);
	fc_verify_log(&v, &ckpt);
	fc_verify_prepared(&v);

	if (v.problems > 0)
	{
		fc_verify_info(&v, "%d problem%s found%s", v.problems, v.problems == 1 ? "" : "s",
					   v.warnings > 0 ? ", and warnings" : "");
		return 1;
	}
	fc_verify_info(&v, "no damage found%s", v.warnings > 0 ? " (see the warnings)" : "");
	return 0;
}
