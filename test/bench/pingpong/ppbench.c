/*-------------------------------------------------------------------------
 *
 * ppbench.c
 *	  Driver of the synthetic checkpointing experiment of Cao et al. 2011
 *	  (section 5.1, Figures 5, 8 and 9).
 *
 * Workload: the application state is `objects` objects of `words` 4-byte
 * words (25,000 x 2,000 = 200 MB by default).  A trace of updates is made
 * up front and kept in memory, as in the paper: each update picks an object
 * and then a word within it, both Zipf(alpha) with rank 0 the hottest.
 *
 * Time: as in the paper, updates are applied as fast as possible and time
 * is *simulated*: at rate R, one 0.1 s interval is R / 10 consecutive
 * updates of the trace and a checkpoint period is `period-intervals` such
 * intervals (40, i.e. 4 s).  The point of consistency that starts each
 * period runs PrepareForNextCheckpoint inside the period's first interval,
 * so its cost (NS's copy, BAZZ's negation, BACOU's reset, ping-pong's flip)
 * shows in that interval.  With --paced the intervals are also laid out
 * in real time (each starts 0.1 s after the previous one; the mutator does
 * its R / 10 updates, then sleeps), which the asynchronous writer needs in
 * order to finish a checkpoint within a real 4 s period.
 *
 * Measurement: every interval is bracketed by two reads of the mutator
 * thread's CPU clock (CLOCK_THREAD_CPUTIME_ID) and of CLOCK_MONOTONIC.  CPU
 * time is the primary figure: it is the time the mutator spent, and it is
 * immune to the mutator being descheduled by other work on the machine;
 * the wall figure is kept so the two can be compared.  The overhead of an
 * algorithm is its mutator time minus that of RAW (the same trace, the
 * same intervals, no checkpointing): per checkpoint period, the median
 * over all measured periods of all rounds of each, subtracted.
 *
 *-------------------------------------------------------------------------
 */
#define _GNU_SOURCE
#include "ppbench.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "zipf.h"

#define MAX_ALGS	16
#define MAX_RATES	32

typedef struct config
{
	uint32_t	objects;
	uint32_t	words;
	double		alpha;
	uint64_t	seed;
	uint32_t	rates[MAX_RATES];
	int			nrates;
	const algo_ops *algs[MAX_ALGS];
	int			nalgs;
	int			period_intervals;
	int			interval_ms;	/* simulated (or, paced, real) length */
	int			warmup;			/* periods per rate discarded */
	int			periods;		/* periods per rate measured */
	int			rounds;
	size_t		trace_len;
	bool		paced;
	bool		writer;
	int			sink_mode;
	const char *sink_dir;
	bool		fsync;
	int			pages;
	int			cpu_mutator;	/* -1: no pinning */
	int			cpu_writer;
	const char *out;			/* prefix of CSV files, or NULL */
	const char *label;
	bool		verify;
	bool		selftest;
} config;

typedef struct interval_rec
{
	uint16_t	alg;
	uint16_t	round;
	uint32_t	rate;
	uint16_t	period;
	uint16_t	interval;
	uint8_t		poc;			/* a checkpoint started in this interval */
	uint8_t		deferred;		/* the period's PoC waited for the writer */
	uint64_t	cpu_ns;
	uint64_t	wall_ns;
	uint64_t	poc_ns;			/* wall time of PrepareForNextCheckpoint */
	uint32_t	minflt;			/* page faults taken by the mutator */
	uint32_t	nivcsw;			/* times it was preempted */
} interval_rec;

typedef struct writer_ctl
{
	pthread_t	thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t	requested;		/* written by the mutator under mu */
	uint64_t	done;			/* written by the writer, atomically */
	bool		stop;
	algo	   *a;
	ckpt_sink	sink;
	int			cpu;
	uint64_t	passes;
	uint64_t	total_ns;
	uint64_t	max_ns;
} writer_ctl;

static config cfg;
static uint32_t *trace;
static interval_rec *recs;
static size_t nrecs;
static size_t recs_cap;
static FILE *meta;

/* ------------------------------------------------------------ helpers */

static uint64_t
clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void
die(const char *msg)
{
	fprintf(stderr, "ppbench: %s%s%s\n", msg, errno ? ": " : "",
			errno ? strerror(errno) : "");
	exit(2);
}

static void
note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
note(const char *fmt, ...)
{
	va_list		ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (meta)
	{
		va_start(ap, fmt);
		vfprintf(meta, fmt, ap);
		va_end(ap);
	}
}

static void
pin_to(int cpu)
{
	cpu_set_t	set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		note("# warning: could not pin to cpu %d: %s\n", cpu, strerror(errno));
}

uint32_t
initial_value(size_t i)
{
	return (uint32_t) (i * 2654435761u) ^ 0x5bd1e995u;
}

/* ------------------------------------------------------------- memory */

/*
 * Anonymous mapping, 2 MB aligned so transparent huge pages can back it
 * when asked (--pages thp), and explicitly refused them otherwise, so the
 * default run is the paper's 4 KB-page configuration whatever the
 * system's THP policy.
 */
void *
big_alloc(algo *a, size_t bytes)
{
	size_t		align = 2u << 20;
	size_t		len = (bytes + align - 1) / align * align;
	char	   *raw;
	char	   *p;

	if (a->nalloc >= 8)
		return NULL;
	raw = mmap(NULL, len + align, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	p = (char *) (((uintptr_t) raw + align - 1) & ~(uintptr_t) (align - 1));
	if (p > raw)
		munmap(raw, (size_t) (p - raw));
	if (p + len < raw + len + align)
		munmap(p + len, (size_t) (raw + len + align - (p + len)));
	madvise(p, len, a->pages == PAGES_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	a->alloc_ptr[a->nalloc] = p;
	a->alloc_len[a->nalloc] = len;
	a->nalloc++;
	a->bytes += bytes;
	return p;
}

void
big_free_all(algo *a)
{
	for (int k = 0; k < a->nalloc; k++)
		munmap(a->alloc_ptr[k], a->alloc_len[k]);
	a->nalloc = 0;
	a->bytes = 0;
}

/* AnonHugePages of the mappings that belong to this algorithm. */
static size_t
huge_bytes(const algo *a)
{
	FILE	   *f = fopen("/proc/self/smaps", "r");
	char		line[256];
	bool		ours = false;
	size_t		total = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
	{
		unsigned long lo,
					hi;
		unsigned long kb;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
		{
			ours = false;
			for (int k = 0; k < a->nalloc; k++)
				if ((uintptr_t) a->alloc_ptr[k] <= lo &&
					hi <= (uintptr_t) a->alloc_ptr[k] + a->alloc_len[k])
					ours = true;
		}
		else if (ours && sscanf(line, "AnonHugePages: %lu kB", &kb) == 1)
			total += kb * 1024;
	}
	fclose(f);
	return total;
}

/* --------------------------------------------------------------- sink */

static void
sink_open(ckpt_sink *s, int mode, const char *dir, bool do_fsync,
		  size_t nwords)
{
	memset(s, 0, sizeof(*s));
	s->mode = mode;
	s->fsync = do_fsync;
	s->buf_words = 256 * 1024;
	s->buf = malloc(s->buf_words * sizeof(uint32_t));
	if (!s->buf)
		die("out of memory");
	s->fd[0] = s->fd[1] = -1;
	if (mode == SINK_MEM)
	{
		s->mem = calloc(nwords, sizeof(uint32_t));
		if (!s->mem)
			die("out of memory");
	}
	else if (mode == SINK_NULL)
	{
		s->fd[0] = s->fd[1] = open("/dev/null", O_WRONLY);
		if (s->fd[0] < 0)
			die("cannot open /dev/null");
	}
	else
	{
		for (int k = 0; k < 2; k++)
		{
			char		path[4096];

			snprintf(path, sizeof(path), "%s/ppbench-ckpt.%d.%d", dir,
					 (int) getpid(), k);
			s->fd[k] = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (s->fd[k] < 0)
				die("cannot create checkpoint file");
			unlink(path);		/* gone when we exit, however we exit */
		}
	}
}

static void
sink_close(ckpt_sink *s)
{
	if (s->mode == SINK_FILE)
	{
		close(s->fd[0]);
		close(s->fd[1]);
	}
	else if (s->mode == SINK_NULL)
		close(s->fd[0]);
	free(s->mem);
	free(s->buf);
}

static void
sink_flush(ckpt_sink *s)
{
	size_t		bytes = s->fill * sizeof(uint32_t);

	if (s->fill == 0)
		return;
	if (s->mode == SINK_MEM)
		memcpy(s->mem + s->pos, s->buf, bytes);
	else
	{
		size_t		done = 0;

		while (done < bytes)
		{
			ssize_t		r;

			if (s->mode == SINK_FILE)
				r = pwrite(s->fd[s->which], (char *) s->buf + done,
						   bytes - done,
						   (off_t) (s->pos * sizeof(uint32_t) + done));
			else
				r = write(s->fd[0], (char *) s->buf + done, bytes - done);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				die("checkpoint write failed");
			done += (size_t) r;
		}
	}
	s->pos += s->fill;
	s->bytes += bytes;
	s->fill = 0;
}

void
sink_put(ckpt_sink *s, const uint32_t *words, size_t n)
{
	while (n > 0)
	{
		size_t		take = s->buf_words - s->fill;

		if (take > n)
			take = n;
		memcpy(s->buf + s->fill, words, take * sizeof(uint32_t));
		s->fill += take;
		words += take;
		n -= take;
		if (s->fill == s->buf_words)
			sink_flush(s);
	}
}

static void
sink_begin(ckpt_sink *s)
{
	s->which ^= 1;				/* double backup: the other file */
	s->pos = 0;
	s->fill = 0;
}

static void
sink_end(ckpt_sink *s)
{
	sink_flush(s);
	if (s->mode == SINK_FILE && s->fsync)
		fdatasync(s->fd[s->which]);
}

/* ------------------------------------------------------------- writer */

static void *
writer_main(void *arg)
{
	writer_ctl *w = arg;

	pin_to(w->cpu);
	for (;;)
	{
		uint64_t	req;
		uint64_t	t0;
		uint64_t	dt;

		pthread_mutex_lock(&w->mu);
		while (!w->stop && w->requested == __atomic_load_n(&w->done, __ATOMIC_RELAXED))
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stop)
		{
			pthread_mutex_unlock(&w->mu);
			break;
		}
		req = w->requested;
		pthread_mutex_unlock(&w->mu);

		t0 = clock_ns(CLOCK_MONOTONIC);
		sink_begin(&w->sink);
		w->a->ops->write(w->a, &w->sink);
		sink_end(&w->sink);
		dt = clock_ns(CLOCK_MONOTONIC) - t0;
		w->passes++;
		w->total_ns += dt;
		if (dt > w->max_ns)
			w->max_ns = dt;
		__atomic_store_n(&w->done, req, __ATOMIC_RELEASE);
	}
	return NULL;
}

static bool
writer_idle(writer_ctl *w)
{
	return __atomic_load_n(&w->done, __ATOMIC_ACQUIRE) == w->requested;
}

static void
writer_notify(writer_ctl *w)
{
	pthread_mutex_lock(&w->mu);
	w->requested++;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static void
writer_start(writer_ctl *w, algo *a, int sink_mode)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->a = a;
	w->cpu = cfg.cpu_writer;
	sink_open(&w->sink, sink_mode, cfg.sink_dir, cfg.fsync, a->nwords);
	if (pthread_create(&w->thread, NULL, writer_main, w) != 0)
		die("cannot start writer thread");
}

static void
writer_wait(writer_ctl *w)
{
	while (!writer_idle(w))
		sched_yield();
}

static void
writer_stop(writer_ctl *w)
{
	writer_wait(w);
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	sink_close(&w->sink);
}

/* -------------------------------------------------------------- trace */

static void
make_trace(void)
{
	fc_zipf		zo;
	fc_zipf		zw;
	fc_rng		rng;
	uint64_t	t0 = clock_ns(CLOCK_MONOTONIC);

	if (fc_zipf_init(&zo, cfg.objects, cfg.alpha) != 0 ||
		fc_zipf_init(&zw, cfg.words, cfg.alpha) != 0)
		die("cannot build Zipf tables");
	trace = malloc(cfg.trace_len * sizeof(uint32_t));
	if (!trace)
		die("out of memory for the trace");
	fc_rng_seed(&rng, cfg.seed);
	for (size_t j = 0; j < cfg.trace_len; j++)
	{
		uint32_t	o = fc_zipf_next(&zo, &rng);
		uint32_t	w = fc_zipf_next(&zw, &rng);

		trace[j] = o * cfg.words + w;
	}
	fc_zipf_free(&zo);
	fc_zipf_free(&zw);
	note("# trace: %zu updates (%.0f MB) in %.2f s\n", cfg.trace_len,
		 cfg.trace_len * 4.0 / 1e6, (clock_ns(CLOCK_MONOTONIC) - t0) / 1e9);
}

/* Apply n updates from trace position *pos (wrapping), values from *val. */
static void
apply_updates(algo *a, size_t *pos, uint32_t *val, size_t n, uint32_t *truth)
{
	while (n > 0)
	{
		size_t		take = cfg.trace_len - *pos;

		if (take > n)
			take = n;
		a->ops->update(a, trace + *pos, take, *val);
		if (truth)
			for (size_t j = 0; j < take; j++)
				truth[trace[*pos + j]] = *val + (uint32_t) j;
		*val += (uint32_t) take;
		*pos = (*pos + take) % cfg.trace_len;
		n -= take;
	}
}

/* ------------------------------------------------------------ running */

static void
add_rec(const interval_rec *r)
{
	if (nrecs == recs_cap)
	{
		recs_cap = recs_cap ? recs_cap * 2 : 65536;
		recs = realloc(recs, recs_cap * sizeof(interval_rec));
		if (!recs)
			die("out of memory");
	}
	recs[nrecs++] = *r;
}

static void
sleep_until(uint64_t t)
{
	struct timespec ts;

	ts.tv_sec = (time_t) (t / 1000000000ULL);
	ts.tv_nsec = (long) (t % 1000000000ULL);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

typedef struct verify_state
{
	uint32_t   *truth;			/* plain copy of the state, kept in step */
	uint32_t   *ref;			/* the state at the last checkpoint's PoC */
	bool		pending;		/* a checkpoint of ref is being written */
	uint64_t	checkpoints;
	uint64_t	ckpt_mismatch;
	uint64_t	read_mismatch;
} verify_state;

static void
verify_check(algo *a, writer_ctl *w, verify_state *v)
{
	if (v->pending)
	{
		for (size_t i = 0; i < a->nwords; i++)
			if (w->sink.mem[i] != v->ref[i])
				v->ckpt_mismatch++;
		v->checkpoints++;
		v->pending = false;
	}
}

/*
 * Point of consistency: start a checkpoint if the writer is done with the
 * last one (paper, Algorithms 1 and 2), else report that it must wait.
 */
static bool
point_of_consistency(algo *a, writer_ctl *w, verify_state *v)
{
	if (w)
	{
		if (v)
			writer_wait(w);
		else if (!writer_idle(w))
			return false;
	}
	if (v)
	{
		verify_check(a, w, v);
		for (size_t i = 0; i < a->nwords; i++)
		{
			if (a->ops->read(a, i) != v->truth[i])
				v->read_mismatch++;
			v->ref[i] = v->truth[i];
		}
	}
	a->ops->prepare(a);
	if (w)
	{
		writer_notify(w);
		if (v)
			v->pending = true;
	}
	return true;
}

/* One rate: warm-up and measured periods, every interval timed. */
static void
run_rate(algo *a, int alg_idx, int round, uint32_t rate, writer_ctl *w,
		 verify_state *v, uint32_t *val)
{
	size_t		per_interval = (size_t) rate * cfg.interval_ms / 1000;
	size_t		pos = 0;		/* every algorithm replays the same updates */
	int			total = cfg.warmup + cfg.periods;
	uint64_t	interval_ns = (uint64_t) cfg.interval_ms * 1000000ULL;
	uint64_t	base = clock_ns(CLOCK_MONOTONIC) + interval_ns / 10;
	uint64_t	k = 0;

	for (int p = 0; p < total; p++)
	{
		bool		poc_pending = true;
		bool		deferred = false;

		for (int iv = 0; iv < cfg.period_intervals; iv++, k++)
		{
			interval_rec r;
			uint64_t	c0,
						w0,
						p0,
						p1 = 0;
			bool		poc = false;

			struct rusage ru0,
						ru1;

			if (cfg.paced)
				sleep_until(base + k * interval_ns);
			/* outside the timed section: explains outliers, costs none */
			getrusage(RUSAGE_THREAD, &ru0);
			w0 = clock_ns(CLOCK_MONOTONIC);
			c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
			p0 = w0;
			if (poc_pending)
			{
				poc = point_of_consistency(a, w, v);
				if (poc)
				{
					poc_pending = false;
					p1 = clock_ns(CLOCK_MONOTONIC);
				}
				else
					deferred = true;
			}
			apply_updates(a, &pos, val, per_interval, v ? v->truth : NULL);
			r.cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
			r.wall_ns = clock_ns(CLOCK_MONOTONIC) - w0;
			getrusage(RUSAGE_THREAD, &ru1);
			r.minflt = (uint32_t) (ru1.ru_minflt + ru1.ru_majflt -
								   ru0.ru_minflt - ru0.ru_majflt);
			r.nivcsw = (uint32_t) (ru1.ru_nivcsw - ru0.ru_nivcsw);
			if (p < cfg.warmup)
				continue;
			r.alg = (uint16_t) alg_idx;
			r.round = (uint16_t) round;
			r.rate = rate;
			r.period = (uint16_t) (p - cfg.warmup);
			r.interval = (uint16_t) iv;
			r.poc = poc;
			r.deferred = deferred;
			r.poc_ns = poc ? p1 - p0 : 0;
			add_rec(&r);
		}
	}
}

static void
run_all(void)
{
	uint32_t	val = 1;

	for (int round = 0; round < cfg.rounds; round++)
	{
		for (int ai = 0; ai < cfg.nalgs; ai++)
		{
			algo		a;
			writer_ctl	wctl;
			writer_ctl *w = NULL;
			uint64_t	t0 = clock_ns(CLOCK_MONOTONIC);

			memset(&a, 0, sizeof(a));
			a.ops = cfg.algs[ai];
			a.nwords = (size_t) cfg.objects * cfg.words;
			a.pages = cfg.pages;
			a.writer = cfg.writer && a.ops->write;
			if (a.ops->init(&a) != 0)
				die("cannot allocate the algorithm's state");
			if (round == 0)
				note("# %-8s %7.0f MB, %7.0f MB in huge pages, init %.2f s\n",
					 a.ops->name, a.bytes / 1e6, huge_bytes(&a) / 1e6,
					 (clock_ns(CLOCK_MONOTONIC) - t0) / 1e9);
			if (a.writer)
			{
				writer_start(&wctl, &a, cfg.sink_mode);
				w = &wctl;
			}
			for (int ri = 0; ri < cfg.nrates; ri++)
			{
				fprintf(stderr, "\r# round %d/%d %-8s rate %8u   ",
						round + 1, cfg.rounds, a.ops->name, cfg.rates[ri]);
				run_rate(&a, ai, round, cfg.rates[ri], w, NULL, &val);
			}
			if (w)
			{
				writer_stop(w);
				note("\n# writer %-8s round %d: %lu checkpoints, mean %.1f ms, max %.1f ms, %.0f MB\n",
					 a.ops->name, round, (unsigned long) w->passes,
					 w->passes ? w->total_ns / 1e6 / w->passes : 0.0,
					 w->max_ns / 1e6, w->sink.bytes / 1e6);
			}
			big_free_all(&a);
		}
	}
	fprintf(stderr, "\n");
}

/* ------------------------------------------------------------- verify */

/*
 * Every algorithm with a writer: run updates while the writer really runs
 * concurrently, and check that each checkpoint it produces equals the state
 * at the point of consistency that started it, and that HandleRead returns
 * the current state.
 */
static int
run_verify(void)
{
	int			failures = 0;
	uint32_t	val = 1;

	for (int ai = 0; ai < cfg.nalgs; ai++)
	{
		algo		a;
		writer_ctl	wctl;
		verify_state v;

		if (!cfg.algs[ai]->write)
			continue;
		memset(&a, 0, sizeof(a));
		memset(&v, 0, sizeof(v));
		a.ops = cfg.algs[ai];
		a.nwords = (size_t) cfg.objects * cfg.words;
		a.pages = cfg.pages;
		a.writer = true;
		if (a.ops->init(&a) != 0)
			die("cannot allocate the algorithm's state");
		v.truth = malloc(a.nwords * sizeof(uint32_t));
		v.ref = malloc(a.nwords * sizeof(uint32_t));
		if (!v.truth || !v.ref)
			die("out of memory");
		for (size_t i = 0; i < a.nwords; i++)
			v.truth[i] = initial_value(i);
		writer_start(&wctl, &a, SINK_MEM);
		for (int ri = 0; ri < cfg.nrates; ri++)
			run_rate(&a, ai, 0, cfg.rates[ri], &wctl, &v, &val);
		writer_wait(&wctl);
		verify_check(&a, &wctl, &v);
		writer_stop(&wctl);
		printf("verify %-8s checkpoints=%lu ckpt_mismatch=%lu read_mismatch=%lu %s\n",
			   a.ops->name, (unsigned long) v.checkpoints,
			   (unsigned long) v.ckpt_mismatch, (unsigned long) v.read_mismatch,
			   v.checkpoints > 1 && v.ckpt_mismatch == 0 && v.read_mismatch == 0 ?
			   "ok" : "FAILED");
		if (!(v.checkpoints > 1 && v.ckpt_mismatch == 0 && v.read_mismatch == 0))
			failures++;
		free(v.truth);
		free(v.ref);
		big_free_all(&a);
	}
	nrecs = 0;					/* verify timings are meaningless */
	return failures;
}

/* ----------------------------------------------------------- selftest */

static int
run_selftest(void)
{
	int			fail = 0;
	size_t		nbits = 1000;
	uint64_t   *flat = aligned_alloc(64, 64 * 8);
	uint64_t   *neg = aligned_alloc(64, 64 * 8);
	uint64_t   *pair = aligned_alloc(64, fc_bitpair_nwords(nbits) * 8);
	bool		ref[1000];
	fc_rng		rng;
	fc_zipf		z;
	fc_pp_layout l;
	size_t		cnt = 0;

	fc_rng_seed(&rng, 42);
	fc_bits_fill(flat, nbits, false);
	fc_bitpair_fill(pair, nbits, 0, false);
	fc_bitpair_fill(pair, nbits, 1, true);
	for (size_t i = 0; i < nbits; i++)
	{
		ref[i] = fc_rng_next(&rng) & 1;
		if (ref[i])
		{
			fc_bits_set(flat, i);
			fc_bitpair_test_and_set_atomic(pair, i, 0);
			cnt++;
		}
		else
			fc_bits_clear(flat, i);
	}
	fc_bits_negate(neg, flat, nbits);
	for (size_t i = 0; i < nbits; i++)
	{
		fc_bitpair_copy_bit(pair, i, 0, 1);		/* B := A */
		if (fc_bits_test(flat, i) != ref[i] || fc_bits_test(neg, i) == ref[i] ||
			fc_bitpair_test(pair, i, 0) != ref[i] ||
			fc_bitpair_test(pair, i, 1) != ref[i])
			fail++;
	}
	if (fc_bits_count(flat, nbits) != cnt || fc_bitpair_count(pair, nbits, 0) != cnt)
		fail++;
	fc_bitpair_negate(pair, nbits, 0, 1);
	for (size_t i = 0; i < nbits; i++)
	{
		if (fc_bitpair_test(pair, i, 1) == ref[i])
			fail++;
		if (ref[i])
			fc_bitpair_clear_atomic(pair, i, 0);
	}
	if (fc_bitpair_count(pair, nbits, 0) != 0 ||
		fc_bitpair_count(pair, nbits, 1) != nbits - cnt)
		fail++;
	printf("selftest bitarray %s\n", fail ? "FAILED" : "ok");

	/* Zipf: the observed frequency of the top ranks matches the pmf */
	{
		int			zfail = 0;
		uint32_t	n = 2000;
		size_t		draws = 4000000;
		uint32_t   *hist = calloc(n, sizeof(uint32_t));

		if (fc_zipf_init(&z, n, 0.5) != 0 || !hist)
			die("zipf init");
		for (size_t j = 0; j < draws; j++)
			hist[fc_zipf_next(&z, &rng)]++;
		for (uint32_t k = 0; k < 10; k++)
		{
			double		expect = fc_zipf_pmf(&z, k) * draws;

			if (fabs(hist[k] - expect) > 5 * sqrt(expect))
				zfail++;
		}
		/* the head is heavier than the tail, by (n/1)^0.5 ideally */
		if (!(hist[0] > 20 * hist[n - 1] && hist[n - 1] > 0))
			zfail++;
		printf("selftest zipf %s (P(rank0)=%.4f observed %.4f)\n",
			   zfail ? "FAILED" : "ok", fc_zipf_pmf(&z, 0),
			   (double) hist[0] / draws);
		fail += zfail;
		fc_zipf_free(&z);
		free(hist);
	}

	/* the extension's layout for a 4-byte image: 16 + 3 x 8 bytes */
	fc_pp_layout_init(&l, sizeof(fc_pp_marks), sizeof(uint32_t));
	printf("selftest pingpong layout stride=%u live=%u shadow=%u,%u %s\n",
		   l.stride, l.live_offset, l.shadow_offset[0], l.shadow_offset[1],
		   l.stride == 40 ? "ok" : "FAILED");
	if (l.stride != 40)
		fail++;
	free(flat);
	free(neg);
	free(pair);
	return fail;
}

/* ------------------------------------------------------------- output */

static int
cmp_u64(const void *x, const void *y)
{
	uint64_t	a = *(const uint64_t *) x;
	uint64_t	b = *(const uint64_t *) y;

	return a < b ? -1 : a > b;
}

/* Quantile q of v[0..n-1], sorted in place; linear interpolation. */
static double
quantile(uint64_t *v, size_t n, double q)
{
	double		h;
	size_t		lo;

	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(uint64_t), cmp_u64);
	h = q * (double) (n - 1);
	lo = (size_t) h;
	if (lo + 1 >= n)
		return (double) v[n - 1];
	return v[lo] + (h - lo) * ((double) v[lo + 1] - (double) v[lo]);
}

typedef struct summary
{
	size_t		periods;
	double		med_ms;
	double		p25_ms;
	double		p75_ms;
	double		wall_med_ms;
	double		iv_med_ms;
	double		iv_max_ms;
	double		poc_med_ms;
	size_t		deferred;
} summary;

static summary
summarise(int alg, uint32_t rate)
{
	summary		s;
	size_t		np = (size_t) cfg.rounds * cfg.periods;
	uint64_t   *cpu = calloc(np, sizeof(uint64_t));
	uint64_t   *wall = calloc(np, sizeof(uint64_t));
	uint64_t   *iv = malloc(nrecs * sizeof(uint64_t));
	uint64_t   *poc = malloc(np * sizeof(uint64_t));
	bool	   *seen = calloc(np, sizeof(bool));
	size_t		niv = 0;
	size_t		npoc = 0;

	memset(&s, 0, sizeof(s));
	for (size_t j = 0; j < nrecs; j++)
	{
		interval_rec *r = &recs[j];
		size_t		slot;

		if (r->alg != alg || r->rate != rate)
			continue;
		slot = (size_t) r->round * cfg.periods + r->period;
		cpu[slot] += r->cpu_ns;
		wall[slot] += r->wall_ns;
		seen[slot] = true;
		iv[niv++] = r->cpu_ns;
		if (r->poc)
			poc[npoc++] = r->poc_ns;
		if (r->deferred && r->interval == 0)
			s.deferred++;
	}
	for (size_t k = 0; k < np; k++)
		if (seen[k])
		{
			cpu[s.periods] = cpu[k];
			wall[s.periods] = wall[k];
			s.periods++;
		}
	s.med_ms = quantile(cpu, s.periods, 0.5) / 1e6;
	s.p25_ms = quantile(cpu, s.periods, 0.25) / 1e6;
	s.p75_ms = quantile(cpu, s.periods, 0.75) / 1e6;
	s.wall_med_ms = quantile(wall, s.periods, 0.5) / 1e6;
	s.iv_med_ms = quantile(iv, niv, 0.5) / 1e6;
	s.iv_max_ms = niv ? quantile(iv, niv, 1.0) / 1e6 : NAN;
	s.poc_med_ms = quantile(poc, npoc, 0.5) / 1e6;
	free(cpu);
	free(wall);
	free(iv);
	free(poc);
	free(seen);
	return s;
}

static void
write_outputs(void)
{
	FILE	   *f = NULL;
	int			raw = -1;

	for (int ai = 0; ai < cfg.nalgs; ai++)
		if (strcmp(cfg.algs[ai]->name, "RAW") == 0)
			raw = ai;

	if (cfg.out)
	{
		char		path[4096];

		snprintf(path, sizeof(path), "%s.intervals.csv", cfg.out);
		f = fopen(path, "w");
		if (!f)
			die("cannot write the intervals CSV");
		fprintf(f, "label,alg,rate,round,period,interval,poc,deferred,cpu_ns,wall_ns,poc_ns,faults,preempted\n");
		for (size_t j = 0; j < nrecs; j++)
		{
			interval_rec *r = &recs[j];

			fprintf(f, "%s,%s,%u,%u,%u,%u,%u,%u,%lu,%lu,%lu,%u,%u\n", cfg.label,
					cfg.algs[r->alg]->name, r->rate, r->round, r->period,
					r->interval, r->poc, r->deferred, (unsigned long) r->cpu_ns,
					(unsigned long) r->wall_ns, (unsigned long) r->poc_ns,
					r->minflt, r->nivcsw);
		}
		fclose(f);
		snprintf(path, sizeof(path), "%s.summary.csv", cfg.out);
		f = fopen(path, "w");
		if (!f)
			die("cannot write the summary CSV");
		fprintf(f, "label,alg,rate,periods,period_ms_median,period_ms_p25,period_ms_p75,"
				"period_wall_ms_median,overhead_ms,overhead_pct,overhead_ns_per_update,"
				"interval_ms_median,interval_ms_max,poc_ms_median,deferred_pocs\n");
	}

	printf("| alg | rate/s | periods | mutator ms/period (median) | overhead ms/period | overhead %% of RAW | ns/update extra | PoC ms |\n");
	printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int ri = 0; ri < cfg.nrates; ri++)
	{
		uint32_t	rate = cfg.rates[ri];
		summary		base;
		double		updates = (double) rate * cfg.interval_ms / 1000.0 *
			cfg.period_intervals;

		if (raw >= 0)
			base = summarise(raw, rate);
		for (int ai = 0; ai < cfg.nalgs; ai++)
		{
			summary		s = summarise(ai, rate);
			double		ovh = raw >= 0 ? s.med_ms - base.med_ms : NAN;
			double		pct = raw >= 0 ? 100.0 * ovh / base.med_ms : NAN;
			double		nsu = ovh * 1e6 / updates;

			printf("| %s | %u | %zu | %.3f | %.3f | %.1f | %.2f | %.3f |\n",
				   cfg.algs[ai]->name, rate, s.periods, s.med_ms, ovh, pct,
				   nsu, s.poc_med_ms);
			if (f)
				fprintf(f, "%s,%s,%u,%zu,%.4f,%.4f,%.4f,%.4f,%.4f,%.2f,%.3f,%.4f,%.4f,%.4f,%zu\n",
						cfg.label, cfg.algs[ai]->name, rate, s.periods, s.med_ms,
						s.p25_ms, s.p75_ms, s.wall_med_ms, ovh, pct, nsu,
						s.iv_med_ms, s.iv_max_ms, s.poc_med_ms, s.deferred);
		}
	}
	if (f)
		fclose(f);
}

/* ---------------------------------------------------------------- CLI */

static void
usage(void)
{
	fprintf(stderr,
			"usage: ppbench [options]\n"
			"  --quick               small state, 3 rates, 1 round (smoke test)\n"
			"  --objects N           objects (25000)\n"
			"  --words N             4-byte words per object (2000)\n"
			"  --alpha A             Zipf parameter for object and word (0.5)\n"
			"  --rates R1,R2,..      updates per second (10000..5120000 doubling)\n"
			"  --algs A,B,..         of RAW,NS,BACOU,BAZZ,NPP,IPP,IPPSLOT (all), RAW16, IPPW\n"
			"  --period-intervals N  intervals per checkpoint period (40)\n"
			"  --interval-ms N       interval length (100)\n"
			"  --warmup N            discarded periods per rate (1)\n"
			"  --periods N           measured periods per rate (5)\n"
			"  --rounds N            repetitions of everything (3)\n"
			"  --trace-len N         updates in the trace (33554432)\n"
			"  --seed N              trace seed (1)\n"
			"  --paced               lay intervals out in real time\n"
			"  --writer              run the asynchronous writer\n"
			"  --sink null|DIR       writer output: /dev/null or files in DIR (null)\n"
			"  --fsync               fdatasync each checkpoint file\n"
			"  --pages 4k|thp        page size for the state (4k)\n"
			"  --pin M,W             pin mutator to cpu M and writer to cpu W\n"
			"  --out PREFIX          write PREFIX.intervals.csv, PREFIX.summary.csv\n"
			"  --label L             label column of the CSVs\n"
			"  --verify              check every algorithm's checkpoints\n"
			"  --selftest            check bitarray.c and zipf.c\n");
	exit(2);
}

static int
parse_list(const char *s, uint32_t *out, int max)
{
	int			n = 0;
	char	   *copy = strdup(s);
	char	   *save = NULL;

	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
	{
		if (n == max)
			usage();
		out[n++] = (uint32_t) strtoul(t, NULL, 10);
	}
	free(copy);
	return n;
}

static void
parse_args(int argc, char **argv)
{
	static const struct option opts[] = {
		{"quick", no_argument, NULL, 'q'},
		{"objects", required_argument, NULL, 'o'},
		{"words", required_argument, NULL, 'w'},
		{"alpha", required_argument, NULL, 'a'},
		{"rates", required_argument, NULL, 'r'},
		{"algs", required_argument, NULL, 'A'},
		{"period-intervals", required_argument, NULL, 'I'},
		{"interval-ms", required_argument, NULL, 'i'},
		{"warmup", required_argument, NULL, 'W'},
		{"periods", required_argument, NULL, 'p'},
		{"rounds", required_argument, NULL, 'R'},
		{"trace-len", required_argument, NULL, 't'},
		{"seed", required_argument, NULL, 's'},
		{"paced", no_argument, NULL, 'P'},
		{"writer", no_argument, NULL, 'X'},
		{"sink", required_argument, NULL, 'k'},
		{"fsync", no_argument, NULL, 'F'},
		{"pages", required_argument, NULL, 'g'},
		{"pin", required_argument, NULL, 'n'},
		{"out", required_argument, NULL, 'O'},
		{"label", required_argument, NULL, 'L'},
		{"verify", no_argument, NULL, 'V'},
		{"selftest", no_argument, NULL, 'T'},
		{NULL, 0, NULL, 0}
	};
	int			c;

	cfg.objects = 25000;
	cfg.words = 2000;
	cfg.alpha = 0.5;
	cfg.seed = 1;
	cfg.nrates = 0;
	for (uint32_t r = 10000; r <= 5120000; r *= 2)
		cfg.rates[cfg.nrates++] = r;
	cfg.nalgs = 0;
	for (int k = 0; all_algos[k]; k++)
		cfg.algs[cfg.nalgs++] = all_algos[k];
	cfg.period_intervals = 40;
	cfg.interval_ms = 100;
	cfg.warmup = 1;
	cfg.periods = 5;
	cfg.rounds = 3;
	cfg.trace_len = (size_t) 1 << 25;
	cfg.sink_mode = SINK_NULL;
	cfg.pages = PAGES_4K;
	cfg.cpu_mutator = cfg.cpu_writer = -1;
	cfg.label = "run";

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1)
	{
		switch (c)
		{
			case 'q':
				cfg.objects = 2500;
				cfg.nrates = 0;
				cfg.rates[cfg.nrates++] = 10000;
				cfg.rates[cfg.nrates++] = 320000;
				cfg.rates[cfg.nrates++] = 1280000;
				cfg.warmup = 1;
				cfg.periods = 2;
				cfg.rounds = 1;
				cfg.trace_len = (size_t) 1 << 22;
				break;
			case 'o':
				cfg.objects = (uint32_t) strtoul(optarg, NULL, 10);
				break;
			case 'w':
				cfg.words = (uint32_t) strtoul(optarg, NULL, 10);
				break;
			case 'a':
				cfg.alpha = strtod(optarg, NULL);
				break;
			case 'r':
				cfg.nrates = parse_list(optarg, cfg.rates, MAX_RATES);
				break;
			case 'A':
				{
					char	   *copy = strdup(optarg);
					char	   *save = NULL;

					cfg.nalgs = 0;
					for (char *t = strtok_r(copy, ",", &save); t;
						 t = strtok_r(NULL, ",", &save))
					{
						if (!find_algo(t) || cfg.nalgs == MAX_ALGS)
						{
							fprintf(stderr, "ppbench: unknown algorithm %s\n", t);
							usage();
						}
						cfg.algs[cfg.nalgs++] = find_algo(t);
					}
					free(copy);
				}
				break;
			case 'I':
				cfg.period_intervals = atoi(optarg);
				break;
			case 'i':
				cfg.interval_ms = atoi(optarg);
				break;
			case 'W':
				cfg.warmup = atoi(optarg);
				break;
			case 'p':
				cfg.periods = atoi(optarg);
				break;
			case 'R':
				cfg.rounds = atoi(optarg);
				break;
			case 't':
				cfg.trace_len = strtoull(optarg, NULL, 10);
				break;
			case 's':
				cfg.seed = strtoull(optarg, NULL, 10);
				break;
			case 'P':
				cfg.paced = true;
				break;
			case 'X':
				cfg.writer = true;
				break;
			case 'k':
				if (strcmp(optarg, "null") == 0)
					cfg.sink_mode = SINK_NULL;
				else
				{
					cfg.sink_mode = SINK_FILE;
					cfg.sink_dir = optarg;
				}
				break;
			case 'F':
				cfg.fsync = true;
				break;
			case 'g':
				if (strcmp(optarg, "thp") == 0)
					cfg.pages = PAGES_THP;
				else if (strcmp(optarg, "4k") == 0)
					cfg.pages = PAGES_4K;
				else
					usage();
				break;
			case 'n':
				if (sscanf(optarg, "%d,%d", &cfg.cpu_mutator, &cfg.cpu_writer) != 2)
					usage();
				break;
			case 'O':
				cfg.out = optarg;
				break;
			case 'L':
				cfg.label = optarg;
				break;
			case 'V':
				cfg.verify = true;
				break;
			case 'T':
				cfg.selftest = true;
				break;
			default:
				usage();
		}
	}
	if (cfg.objects == 0 || cfg.words == 0 || cfg.nrates == 0 ||
		cfg.period_intervals <= 0 || cfg.interval_ms <= 0 ||
		cfg.periods <= 0 || cfg.rounds <= 0 || cfg.warmup < 0 ||
		cfg.trace_len == 0 ||
		(uint64_t) cfg.objects * cfg.words > UINT32_MAX)
		usage();
}

int
main(int argc, char **argv)
{
	uint64_t	t0 = clock_ns(CLOCK_MONOTONIC);
	int			failures = 0;

	parse_args(argc, argv);
	if (cfg.selftest)
		return run_selftest() ? 1 : 0;
	if (cfg.out)
	{
		char		path[4096];

		snprintf(path, sizeof(path), "%s.meta.txt", cfg.out);
		meta = fopen(path, "w");
	}
	note("# ppbench: %u objects x %u words (%.0f MB), alpha %.2f, %d rates, "
		 "%d x %d ms per period, warmup %d, periods %d, rounds %d, %s, writer %s, "
		 "pages %s%s\n",
		 cfg.objects, cfg.words, (double) cfg.objects * cfg.words * 4 / 1e6,
		 cfg.alpha, cfg.nrates, cfg.period_intervals, cfg.interval_ms,
		 cfg.warmup, cfg.periods, cfg.rounds,
		 cfg.paced ? "paced in real time" : "simulated time",
		 cfg.verify ? "on (verify)" : cfg.writer ? "on" : "off",
		 cfg.pages == PAGES_THP ? "thp" : "4k",
		 cfg.verify ? "" : "");
	pin_to(cfg.cpu_mutator);
	make_trace();
	if (cfg.verify)
		failures = run_verify();
	else
	{
		run_all();
		write_outputs();
	}
	note("# total %.1f s\n", (clock_ns(CLOCK_MONOTONIC) - t0) / 1e9);
	if (meta)
		fclose(meta);
	return failures ? 1 : 0;
}
