/*-------------------------------------------------------------------------
 *
 * ppbench.h
 *	  Synthetic checkpointing microbenchmark after Cao et al., SIGMOD 2011,
 *	  section 5: shared declarations of the driver and the algorithms.
 *
 * Every algorithm implements the paper's Interface 1:
 *	prepare		Mutator::PrepareForNextCheckpoint (called at a point of
 *				consistency, only once the writer is done);
 *	update		a batch of Mutator::HandleWrite calls, inlined in one loop
 *				(the paper's "aggressive inlining": no call per update);
 *	read		Mutator::HandleRead (used by --verify, not timed: the paper's
 *				workload has no reads either);
 *	write		one pass of AsynchronousWriter::WriteToStableStorage.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PPBENCH_H
#define PPBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bitarray.h"
#include "pingpong.h"

#define PAGES_4K	0
#define PAGES_THP	1

#define SINK_NULL	0			/* write(2) to /dev/null: reads all, stores none */
#define SINK_FILE	1			/* double backup: two files, alternating */
#define SINK_MEM	2			/* image kept in memory for --verify */

/* Where the asynchronous writer sends a checkpoint. */
typedef struct ckpt_sink
{
	int			mode;
	int			fd[2];
	int			which;			/* backup file written by this checkpoint */
	bool		fsync;
	uint32_t   *mem;			/* SINK_MEM: the whole image */
	uint32_t   *buf;			/* gather buffer */
	size_t		buf_words;
	size_t		fill;
	size_t		pos;			/* words of this checkpoint written so far */
	uint64_t	bytes;			/* total bytes written */
} ckpt_sink;

typedef struct algo algo;

typedef struct algo_ops
{
	const char *name;
	const char *desc;
	int			(*init) (algo *a);
	void		(*prepare) (algo *a);
	void		(*update) (algo *a, const uint32_t *idx, size_t n, uint32_t v0);
	uint32_t	(*read) (algo *a, size_t i);
	void		(*write) (algo *a, ckpt_sink *sink);	/* NULL: no checkpoint */
} algo_ops;

/* The state of one algorithm; each uses the fields it needs. */
struct algo
{
	const algo_ops *ops;
	size_t		nwords;			/* 4-byte words of application state */
	int			pages;			/* PAGES_* */
	bool		writer;			/* allocate what the writer needs */
	uint64_t	phase;			/* ping-pong phase (pingpong.h) */
	uint32_t   *as;				/* RAW, NS, NPP: live state */
	uint32_t   *shadow;			/* NS: snapshot */
	uint32_t   *zz[2];			/* BAZZ: AS_0 and AS_1 */
	uint32_t   *cou;			/* BACOU: lines of 8 live + 8 shadow words */
	uint64_t   *bits;			/* BACOU: dirty|lock; BAZZ: MR|MW (pair) */
	uint32_t   *img[2];			/* NPP: odd and even */
	uint8_t    *mark[2];		/* NPP: one byte per word and image */
	void	   *rec;			/* IPP: interleaved records; IPPSLOT: slots */
	fc_pp_layout layout;		/* IPPSLOT */
	uint32_t   *ckpt;			/* ping-pong writer's rolled-forward copy */
	size_t		bytes;			/* memory allocated, for the report */
	void	   *alloc_ptr[8];	/* big_alloc'd regions, freed by big_free_all */
	size_t		alloc_len[8];
	int			nalloc;
};

extern const algo_ops *const all_algos[];
extern const algo_ops *find_algo(const char *name);

/* memory and writer helpers, in ppbench.c */
extern void *big_alloc(algo *a, size_t bytes);
extern void big_free_all(algo *a);
extern void sink_put(ckpt_sink *s, const uint32_t *words, size_t n);
extern uint32_t initial_value(size_t i);

#endif							/* PPBENCH_H */
