/*-------------------------------------------------------------------------
 *
 * algos.c
 *	  The checkpointing algorithms of Cao et al. 2011 (sections 2.3-4), each
 *	  in the cache-aware variant the paper evaluates, plus the bare mutator
 *	  they are measured against and the extension's own slot layout.
 *
 *	RAW		no checkpointing: the baseline every overhead is relative to.
 *	NS		Naive Snapshot: memcpy of the whole state at the point of
 *			consistency; nothing per update.
 *	BACOU	Bit-Array Packed Copy-on-Update: 32-byte blocks; each 64-byte
 *			line holds a block of the live state and its shadow (paper 4.1);
 *			dirty and lock bits of 256 blocks share one line (bitarray.h
 *			pair layout).  First update of a block in a period: lock, copy
 *			the block to its shadow, mark dirty, unlock.  The mutator
 *			clears the dirty bits at every point of consistency.
 *	BAZZ	Bit-Array Packed Wait-Free Zigzag: AS_0 and AS_1 separate; MR
 *			and MW bits of 256 words share one line (paper 4.2); the point
 *			of consistency negates MR into MW word-at-a-time.
 *	NPP		Naive Wait-Free Ping-Pong: AS, odd, even and two byte-per-word
 *			mark arrays as five separate arrays (paper 4.3).
 *	IPP		Interleaved Wait-Free Ping-Pong: per word a 16-byte record
 *			{AS, odd, even, mark[2]}, four records per cache line, so the
 *			extra writes of an update hit the line the AS write fetched.
 *	IPPSLOT	Interleaved Ping-Pong with the extension's own slot layout and
 *			commit/writer primitives (fc_pp_layout_init, fc_pp_install,
 *			fc_pp_take_previous), one 4-byte word per slot: 40-byte slots.
 *
 * All ping-pong variants take the phase flip and the current/previous
 * image choice from src/core/pingpong.h, and their marks use its
 * FC_PP_CLEAN / FC_PP_DIRTY states.
 *
 * Memory is touched at init so no page fault lands in a timed interval.
 *
 *-------------------------------------------------------------------------
 */
#include "ppbench.h"

#include <stddef.h>
#include <string.h>

/* ---------------------------------------------------------------- RAW */

static int
raw_init(algo *a)
{
	a->as = big_alloc(a, a->nwords * sizeof(uint32_t));
	if (!a->as)
		return -1;
	for (size_t i = 0; i < a->nwords; i++)
		a->as[i] = initial_value(i);
	return 0;
}

static void
raw_prepare(algo *a)
{
	(void) a;
}

static void
raw_update(algo *a, const uint32_t *restrict idx, size_t n, uint32_t v0)
{
	uint32_t   *restrict as = a->as;

	for (size_t j = 0; j < n; j++)
		as[idx[j]] = v0 + (uint32_t) j;
}

static uint32_t
raw_read(algo *a, size_t i)
{
	return a->as[i];
}

/* ----------------------------------------------------------------- NS */

static int
ns_init(algo *a)
{
	if (raw_init(a) != 0)
		return -1;
	a->shadow = big_alloc(a, a->nwords * sizeof(uint32_t));
	if (!a->shadow)
		return -1;
	memcpy(a->shadow, a->as, a->nwords * sizeof(uint32_t));
	return 0;
}

/* The whole cost of NS: one bulk copy, with the mutator stopped. */
static void
ns_prepare(algo *a)
{
	memcpy(a->shadow, a->as, a->nwords * sizeof(uint32_t));
}

static void
ns_write(algo *a, ckpt_sink *sink)
{
	sink_put(sink, a->shadow, a->nwords);
}

/* -------------------------------------------------------------- BACOU */

#define COU_BLOCK_WORDS		8	/* 32-byte block; its shadow fills the line */
#define COU_LINE_WORDS		(2 * COU_BLOCK_WORDS)
#define COU_DIRTY			0	/* bit-pair halves */
#define COU_LOCK			1

static size_t
cou_nblocks(const algo *a)
{
	return (a->nwords + COU_BLOCK_WORDS - 1) / COU_BLOCK_WORDS;
}

static int
bacou_init(algo *a)
{
	size_t		nb = cou_nblocks(a);

	a->cou = big_alloc(a, nb * COU_LINE_WORDS * sizeof(uint32_t));
	a->bits = big_alloc(a, fc_bitpair_nwords(nb) * sizeof(uint64_t));
	if (!a->cou || !a->bits)
		return -1;
	for (size_t i = 0; i < a->nwords; i++)
	{
		uint32_t   *line = a->cou + (i / COU_BLOCK_WORDS) * COU_LINE_WORDS;

		line[i % COU_BLOCK_WORDS] = initial_value(i);
		line[COU_BLOCK_WORDS + i % COU_BLOCK_WORDS] = initial_value(i);
	}
	memset(a->bits, 0, fc_bitpair_nwords(nb) * sizeof(uint64_t));
	return 0;
}

/* Bulk bit-array reset: every block is clean again for the new period. */
static void
bacou_prepare(algo *a)
{
	fc_bitpair_fill(a->bits, cou_nblocks(a), COU_DIRTY, false);
}

/*
 * First update of a block in this period: save its point-of-consistency
 * image under the block lock, so the writer, which reads either the live
 * block or its shadow under the same lock, never sees a torn block.
 */
static inline void
cou_copy_block(uint64_t *bits, uint32_t *line, size_t b)
{
	uint64_t   *dirty = fc_bitpair_word(bits, b, COU_DIRTY);

	while (fc_bitpair_test_and_set_atomic(bits, b, COU_LOCK))
		;						/* only the writer can hold it, briefly */
	memcpy(line + COU_BLOCK_WORDS, line, COU_BLOCK_WORDS * sizeof(uint32_t));
	/* only the mutator writes dirty words, so a plain OR suffices */
	__atomic_store_n(dirty, __atomic_load_n(dirty, __ATOMIC_RELAXED) |
					 fc_bits_mask(b), __ATOMIC_RELAXED);
	fc_bitpair_clear_atomic(bits, b, COU_LOCK);
}

static void
bacou_update(algo *a, const uint32_t *restrict idx, size_t n, uint32_t v0)
{
	uint32_t   *cou = a->cou;
	uint64_t   *bits = a->bits;

	for (size_t j = 0; j < n; j++)
	{
		uint32_t	i = idx[j];
		size_t		b = i / COU_BLOCK_WORDS;
		uint32_t   *line = cou + b * COU_LINE_WORDS;

		if (!(__atomic_load_n(fc_bitpair_word(bits, b, COU_DIRTY),
							  __ATOMIC_RELAXED) & fc_bits_mask(b)))
			cou_copy_block(bits, line, b);
		line[i % COU_BLOCK_WORDS] = v0 + (uint32_t) j;
	}
}

static uint32_t
bacou_read(algo *a, size_t i)
{
	return a->cou[(i / COU_BLOCK_WORDS) * COU_LINE_WORDS + i % COU_BLOCK_WORDS];
}

static void
bacou_write(algo *a, ckpt_sink *sink)
{
	size_t		nb = cou_nblocks(a);

	for (size_t b = 0; b < nb; b++)
	{
		uint32_t   *line = a->cou + b * COU_LINE_WORDS;
		uint32_t	out[COU_BLOCK_WORDS];
		size_t		n = COU_BLOCK_WORDS;

		while (fc_bitpair_test_and_set_atomic(a->bits, b, COU_LOCK))
			;
		if (fc_bitpair_test(a->bits, b, COU_DIRTY))
			memcpy(out, line + COU_BLOCK_WORDS, sizeof(out));
		else
			memcpy(out, line, sizeof(out));
		fc_bitpair_clear_atomic(a->bits, b, COU_LOCK);
		if (b == nb - 1 && a->nwords % COU_BLOCK_WORDS)
			n = a->nwords % COU_BLOCK_WORDS;
		sink_put(sink, out, n);
	}
}

/* --------------------------------------------------------------- BAZZ */

#define ZZ_MR	0
#define ZZ_MW	1

static int
bazz_init(algo *a)
{
	a->zz[0] = big_alloc(a, a->nwords * sizeof(uint32_t));
	a->zz[1] = big_alloc(a, a->nwords * sizeof(uint32_t));
	a->bits = big_alloc(a, fc_bitpair_nwords(a->nwords) * sizeof(uint64_t));
	if (!a->zz[0] || !a->zz[1] || !a->bits)
		return -1;
	for (size_t i = 0; i < a->nwords; i++)
		a->zz[0][i] = a->zz[1][i] = initial_value(i);
	/* reads from AS_0, writes to AS_1 (paper, Algorithm 1) */
	fc_bitpair_fill(a->bits, a->nwords, ZZ_MR, false);
	fc_bitpair_fill(a->bits, a->nwords, ZZ_MW, true);
	return 0;
}

/* Bulk negation MW := NOT MR, 64 bits per instruction. */
static void
bazz_prepare(algo *a)
{
	fc_bitpair_negate(a->bits, a->nwords, ZZ_MR, ZZ_MW);
}

static void
bazz_update(algo *a, const uint32_t *restrict idx, size_t n, uint32_t v0)
{
	uint32_t   *const zz[2] = {a->zz[0], a->zz[1]};
	uint64_t   *bits = a->bits;

	for (size_t j = 0; j < n; j++)
	{
		uint32_t	i = idx[j];
		uint64_t   *mr = fc_bitpair_word(bits, i, ZZ_MR);
		uint64_t	mw = mr[FC_BITPAIR_HALF_WORDS];
		uint64_t	m = fc_bits_mask(i);

		/* AS_MW[i] := v; MR[i] := MW[i] -- no branch */
		zz[(mw >> (i % FC_BITS_PER_WORD)) & 1][i] = v0 + (uint32_t) j;
		__atomic_store_n(mr, (*mr & ~m) | (mw & m), __ATOMIC_RELAXED);
	}
}

static uint32_t
bazz_read(algo *a, size_t i)
{
	return a->zz[fc_bitpair_test(a->bits, i, ZZ_MR)][i];
}

/* Writer: AS_{not MW[k]}[k] for every k, never written during the period. */
static void
bazz_write(algo *a, ckpt_sink *sink)
{
	uint32_t	out[FC_BITS_PER_WORD];

	for (size_t k0 = 0; k0 < a->nwords; k0 += FC_BITS_PER_WORD)
	{
		uint64_t	mw = *fc_bitpair_word(a->bits, k0, ZZ_MW);
		size_t		n = a->nwords - k0 < FC_BITS_PER_WORD ?
			a->nwords - k0 : FC_BITS_PER_WORD;

		for (size_t j = 0; j < n; j++)
			out[j] = a->zz[((mw >> j) & 1) ^ 1][k0 + j];
		sink_put(sink, out, n);
	}
}

/* -------------------------------------------------------- ping-pong */

/*
 * Writer's "Copy" merge (paper 3.3): roll the in-memory copy of the last
 * checkpoint forward with the previous image's marked words, clearing the
 * marks, then stream the copy out.  Done in chunks so the copy is written
 * while still in cache.
 */
#define PP_CHUNK	(64 * 1024)

static int
pp_alloc_ckpt(algo *a)
{
	if (!a->writer)
		return 0;
	a->ckpt = big_alloc(a, a->nwords * sizeof(uint32_t));
	if (!a->ckpt)
		return -1;
	for (size_t i = 0; i < a->nwords; i++)
		a->ckpt[i] = initial_value(i);
	return 0;
}

/* NPP */

static int
npp_init(algo *a)
{
	if (raw_init(a) != 0)
		return -1;
	for (int k = 0; k < 2; k++)
	{
		a->img[k] = big_alloc(a, a->nwords * sizeof(uint32_t));
		a->mark[k] = big_alloc(a, a->nwords);
		if (!a->img[k] || !a->mark[k])
			return -1;
		memcpy(a->img[k], a->as, a->nwords * sizeof(uint32_t));
		memset(a->mark[k], FC_PP_CLEAN, a->nwords);
	}
	a->phase = 0;
	return pp_alloc_ckpt(a);
}

/* The whole point-of-consistency cost of ping-pong: one O(1) flip. */
static void
pp_prepare(algo *a)
{
	fc_pp_flip(&a->phase);
}

static void
npp_update(algo *a, const uint32_t *restrict idx, size_t n, uint32_t v0)
{
	uint32_t	cur = fc_pp_current_image(a->phase);
	uint32_t   *restrict as = a->as;
	uint32_t   *restrict img = a->img[cur];
	uint8_t    *restrict mark = a->mark[cur];

	for (size_t j = 0; j < n; j++)
	{
		uint32_t	i = idx[j];
		uint32_t	v = v0 + (uint32_t) j;

		as[i] = v;
		img[i] = v;
		__atomic_store_n(&mark[i], FC_PP_DIRTY, __ATOMIC_RELEASE);
	}
}

static void
npp_write(algo *a, ckpt_sink *sink)
{
	uint32_t	prev = fc_pp_previous_image(fc_pp_read_phase(&a->phase));
	uint32_t   *img = a->img[prev];
	uint8_t    *mark = a->mark[prev];

	for (size_t k0 = 0; k0 < a->nwords; k0 += PP_CHUNK)
	{
		size_t		k1 = k0 + PP_CHUNK < a->nwords ? k0 + PP_CHUNK : a->nwords;

		for (size_t k = k0; k < k1; k++)
		{
			if (__atomic_load_n(&mark[k], __ATOMIC_ACQUIRE) != FC_PP_CLEAN)
			{
				a->ckpt[k] = img[k];
				__atomic_store_n(&mark[k], FC_PP_CLEAN, __ATOMIC_RELAXED);
			}
		}
		sink_put(sink, a->ckpt + k0, k1 - k0);
	}
}

/* IPP */

typedef struct ipp_rec
{
	uint32_t	as;				/* live word */
	uint32_t	img[2];			/* odd and even */
	uint8_t		state[2];		/* FC_PP_* of img[0], img[1] */
	uint16_t	pad;
} ipp_rec;						/* 16 bytes: four records per cache line */

static int
ipp_init(algo *a)
{
	ipp_rec    *r;

	a->rec = big_alloc(a, a->nwords * sizeof(ipp_rec));
	if (!a->rec)
		return -1;
	r = a->rec;
	for (size_t i = 0; i < a->nwords; i++)
	{
		r[i].as = r[i].img[0] = r[i].img[1] = initial_value(i);
		r[i].state[0] = r[i].state[1] = FC_PP_CLEAN;
		r[i].pad = 0;
	}
	a->phase = 0;
	return pp_alloc_ckpt(a);
}

static void
ipp_update(algo *a, const uint32_t *restrict idx, size_t n, uint32_t v0)
{
	uint32_t	cur = fc_pp_current_image(a->phase);
	ipp_rec    *restrict rec = a->rec;

	for (size_t j = 0; j < n; j++)
	{
		ipp_rec    *r = &rec[idx[j]];
		uint32_t	v = v0 + (uint32_t) j;

		r->as = v;
		r->img[cur] = v;
		__atomic_store_n(&r->state[cur], FC_PP_DIRTY, __ATOMIC_RELEASE);
	}
}

static uint32_t
ipp_read(algo *a, size_t i)
{
	return ((ipp_rec *) a->rec)[i].as;
}

static void
ipp_write(algo *a, ckpt_sink *sink)
{
	uint32_t	prev = fc_pp_previous_image(fc_pp_read_phase(&a->phase));
	ipp_rec    *rec = a->rec;

	for (size_t k0 = 0; k0 < a->nwords; k0 += PP_CHUNK)
	{
		size_t		k1 = k0 + PP_CHUNK < a->nwords ? k0 + PP_CHUNK : a->nwords;

		for (size_t k = k0; k < k1; k++)
		{
			ipp_rec    *r = &rec[k];

			if (__atomic_load_n(&r->state[prev], __ATOMIC_ACQUIRE) != FC_PP_CLEAN)
			{
				a->ckpt[k] = r->img[prev];
				__atomic_store_n(&r->state[prev], FC_PP_CLEAN, __ATOMIC_RELAXED);
			}
		}
		sink_put(sink, a->ckpt + k0, k1 - k0);
	}
}

/* IPPSLOT: the extension's slot = header(fc_pp_marks) + live + odd + even */

static int
ippslot_init(algo *a)
{
	char	   *base;

	fc_pp_layout_init(&a->layout, sizeof(fc_pp_marks), sizeof(uint32_t));
	a->rec = big_alloc(a, a->nwords * a->layout.stride);
	if (!a->rec)
		return -1;
	base = a->rec;
	for (size_t i = 0; i < a->nwords; i++)
	{
		char	   *slot = base + i * a->layout.stride;
		uint32_t	v = initial_value(i);

		fc_pp_reset((fc_pp_marks *) slot);
		memcpy(fc_pp_live(slot, &a->layout), &v, sizeof(v));
		memcpy(fc_pp_shadow(slot, &a->layout, 0), &v, sizeof(v));
		memcpy(fc_pp_shadow(slot, &a->layout, 1), &v, sizeof(v));
	}
	a->phase = 0;
	return pp_alloc_ckpt(a);
}

static void
ippslot_update(algo *a, const uint32_t *restrict idx, size_t n, uint32_t v0)
{
	const fc_pp_layout layout = a->layout;
	uint64_t	phase = a->phase;
	char	   *base = a->rec;

	for (size_t j = 0; j < n; j++)
	{
		char	   *slot = base + (size_t) idx[j] * layout.stride;
		uint32_t	v = v0 + (uint32_t) j;

		memcpy(fc_pp_live(slot, &layout), &v, sizeof(v));
		fc_pp_install((fc_pp_marks *) slot, slot, &layout, phase, &v,
					  sizeof(v));
	}
}

static uint32_t
ippslot_read(algo *a, size_t i)
{
	uint32_t	v;

	memcpy(&v, fc_pp_live((char *) a->rec + i * a->layout.stride, &a->layout),
		   sizeof(v));
	return v;
}

static void
ippslot_write(algo *a, ckpt_sink *sink)
{
	uint64_t	phase = fc_pp_read_phase(&a->phase);
	char	   *base = a->rec;

	for (size_t k0 = 0; k0 < a->nwords; k0 += PP_CHUNK)
	{
		size_t		k1 = k0 + PP_CHUNK < a->nwords ? k0 + PP_CHUNK : a->nwords;

		for (size_t k = k0; k < k1; k++)
		{
			char	   *slot = base + k * a->layout.stride;
			const char *image;
			uint32_t	len;

			if (fc_pp_take_previous((fc_pp_marks *) slot, slot, &a->layout,
									phase, &image, &len) == FC_PP_DIRTY)
				memcpy(&a->ckpt[k], image, sizeof(uint32_t));
		}
		sink_put(sink, a->ckpt + k0, k1 - k0);
	}
}

/* ------------------------------------------------------------- RAW16 */

/*
 * Diagnostic, not one of the paper's algorithms: the bare mutator writing
 * only the AS word of IPP's 16-byte records.  Its difference from RAW is
 * what IPP pays for spreading the state over four times the memory (cache
 * and TLB reach), its difference from IPP what the two extra stores cost.
 */
static int
raw16_init(algo *a)
{
	return ipp_init(a);
}

static void
raw16_update(algo *a, const uint32_t *restrict idx, size_t n, uint32_t v0)
{
	ipp_rec    *restrict rec = a->rec;

	for (size_t j = 0; j < n; j++)
		rec[idx[j]].as = v0 + (uint32_t) j;
}

/* -------------------------------------------------------------- IPPW */

/*
 * Diagnostic variant of IPP: the record is ordered {odd, AS, even, marks}
 * so that AS and the current image are always adjacent, and an update
 * writes both with one 8-byte store (at offset 0 in even phases, 4 in odd
 * ones) plus the mark: two stores instead of three.  When updates miss the
 * cache, each store holds a store-buffer entry until its line arrives, so
 * fewer stores per update leave room for more misses in flight.
 */
typedef struct ippw_rec
{
	uint32_t	img0;
	uint32_t	as;
	uint32_t	img1;
	uint8_t		state[2];
	uint16_t	pad;
} ippw_rec;

static int
ippw_init(algo *a)
{
	ippw_rec   *r;

	a->rec = big_alloc(a, a->nwords * sizeof(ippw_rec));
	if (!a->rec)
		return -1;
	r = a->rec;
	for (size_t i = 0; i < a->nwords; i++)
	{
		r[i].as = r[i].img0 = r[i].img1 = initial_value(i);
		r[i].state[0] = r[i].state[1] = FC_PP_CLEAN;
		r[i].pad = 0;
	}
	a->phase = 0;
	return pp_alloc_ckpt(a);
}

static void
ippw_update(algo *a, const uint32_t *restrict idx, size_t n, uint32_t v0)
{
	uint32_t	cur = fc_pp_current_image(a->phase);
	size_t		off = cur ? offsetof(ippw_rec, as) : offsetof(ippw_rec, img0);
	ippw_rec   *restrict rec = a->rec;

	for (size_t j = 0; j < n; j++)
	{
		ippw_rec   *r = &rec[idx[j]];
		uint64_t	vv = (uint64_t) (v0 + (uint32_t) j) * 0x100000001ULL;

		memcpy((char *) r + off, &vv, sizeof(vv));
		__atomic_store_n(&r->state[cur], FC_PP_DIRTY, __ATOMIC_RELEASE);
	}
}

static uint32_t
ippw_read(algo *a, size_t i)
{
	return ((ippw_rec *) a->rec)[i].as;
}

static void
ippw_write(algo *a, ckpt_sink *sink)
{
	uint32_t	prev = fc_pp_previous_image(fc_pp_read_phase(&a->phase));
	ippw_rec   *rec = a->rec;

	for (size_t k0 = 0; k0 < a->nwords; k0 += PP_CHUNK)
	{
		size_t		k1 = k0 + PP_CHUNK < a->nwords ? k0 + PP_CHUNK : a->nwords;

		for (size_t k = k0; k < k1; k++)
		{
			ippw_rec   *r = &rec[k];

			if (__atomic_load_n(&r->state[prev], __ATOMIC_ACQUIRE) != FC_PP_CLEAN)
			{
				a->ckpt[k] = prev ? r->img1 : r->img0;
				__atomic_store_n(&r->state[prev], FC_PP_CLEAN, __ATOMIC_RELAXED);
			}
		}
		sink_put(sink, a->ckpt + k0, k1 - k0);
	}
}

/* ----------------------------------------------------------- registry */

static const algo_ops raw_ops = {
	"RAW", "no checkpointing (baseline)",
	raw_init, raw_prepare, raw_update, raw_read, NULL
};
static const algo_ops ns_ops = {
	"NS", "Naive Snapshot",
	ns_init, ns_prepare, raw_update, raw_read, ns_write
};
static const algo_ops bacou_ops = {
	"BACOU", "Bit-Array Packed Copy-on-Update",
	bacou_init, bacou_prepare, bacou_update, bacou_read, bacou_write
};
static const algo_ops bazz_ops = {
	"BAZZ", "Bit-Array Packed Wait-Free Zigzag",
	bazz_init, bazz_prepare, bazz_update, bazz_read, bazz_write
};
static const algo_ops npp_ops = {
	"NPP", "Naive Wait-Free Ping-Pong",
	npp_init, pp_prepare, npp_update, raw_read, npp_write
};
static const algo_ops ipp_ops = {
	"IPP", "Interleaved Wait-Free Ping-Pong",
	ipp_init, pp_prepare, ipp_update, ipp_read, ipp_write
};
static const algo_ops ippslot_ops = {
	"IPPSLOT", "Interleaved Ping-Pong, extension slot layout",
	ippslot_init, pp_prepare, ippslot_update, ippslot_read, ippslot_write
};

static const algo_ops raw16_ops = {
	"RAW16", "bare mutator on IPP's 16-byte records (diagnostic)",
	raw16_init, raw_prepare, raw16_update, ipp_read, NULL
};

/* The default set, in run order; RAW16 is only run when asked for. */
const algo_ops *const all_algos[] = {
	&raw_ops, &ns_ops, &bacou_ops, &bazz_ops, &npp_ops, &ipp_ops,
	&ippslot_ops, NULL
};

static const algo_ops ippw_ops = {
	"IPPW", "IPP with AS and the current image in one store (diagnostic)",
	ippw_init, pp_prepare, ippw_update, ippw_read, ippw_write
};

static const algo_ops *const extra_algos[] = {&raw16_ops, &ippw_ops, NULL};

const algo_ops *
find_algo(const char *name)
{
	for (int k = 0; all_algos[k]; k++)
		if (strcmp(all_algos[k]->name, name) == 0)
			return all_algos[k];
	for (int k = 0; extra_algos[k]; k++)
		if (strcmp(extra_algos[k]->name, name) == 0)
			return extra_algos[k];
	return NULL;
}
