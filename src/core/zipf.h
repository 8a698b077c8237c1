/*-------------------------------------------------------------------------
 *
 * zipf.h
 *	  Seeded pseudo-random numbers and a Zipf(alpha) sampler, pure C.
 *
 * The sampler draws ranks 0..n-1 with P(k) proportional to 1 / (k+1)^alpha
 * (rank 0 is the most popular).  It uses Walker's alias method, built once
 * in O(n), so each draw costs one 64-bit random number and one table probe
 * whatever n and alpha are: generating a trace of tens of millions of
 * skewed updates takes well under a second.
 *
 * The generator is xoshiro256** seeded through splitmix64: fast, small
 * state, and the same seed gives the same sequence on every machine, so
 * benchmark traces are reproducible.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_ZIPF_H
#define FC_ZIPF_H

#include <stdint.h>

typedef struct fc_rng
{
	uint64_t	s[4];
} fc_rng;

typedef struct fc_zipf
{
	uint32_t	n;
	double		alpha;
	uint64_t   *threshold;		/* keep column k if low 32 bits < this */
	uint32_t   *alias;			/* otherwise draw alias[k] */
} fc_zipf;

extern void fc_rng_seed(fc_rng *rng, uint64_t seed);

static inline uint64_t
fc_rng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t
fc_rng_next(fc_rng *rng)
{
	uint64_t   *s = rng->s;
	uint64_t	result = fc_rng_rotl(s[1] * 5, 7) * 9;
	uint64_t	t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = fc_rng_rotl(s[3], 45);
	return result;
}

/* Returns 0, or -1 if n is 0 or memory ran out. */
extern int	fc_zipf_init(fc_zipf *z, uint32_t n, double alpha);
extern void fc_zipf_free(fc_zipf *z);
extern double fc_zipf_pmf(const fc_zipf *z, uint32_t rank);

/*
 * One draw.  The high 32 bits pick a column uniformly (multiply-shift, no
 * division), the low 32 bits decide between the column and its alias.
 */
static inline uint32_t
fc_zipf_next(const fc_zipf *z, fc_rng *rng)
{
	uint64_t	r = fc_rng_next(rng);
	uint32_t	col = (uint32_t) (((r >> 32) * z->n) >> 32);

	return (r & 0xffffffffu) < z->threshold[col] ? col : z->alias[col];
}

#endif							/* FC_ZIPF_H */
