/*-------------------------------------------------------------------------
 *
 * zipf.c
 *	  Seeding and alias-table construction for the Zipf sampler (pure C).
 *
 *-------------------------------------------------------------------------
 */
#include "zipf.h"

#include <math.h>
#include <stdlib.h>

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t	z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void
fc_rng_seed(fc_rng *rng, uint64_t seed)
{
	uint64_t	x = seed;

	/* splitmix64 never yields four zero words, which xoshiro forbids */
	for (int i = 0; i < 4; i++)
		rng->s[i] = splitmix64(&x);
}

double
fc_zipf_pmf(const fc_zipf *z, uint32_t rank)
{
	double		h = 0.0;

	if (rank >= z->n)
		return 0.0;
	for (uint32_t k = 0; k < z->n; k++)
		h += pow((double) k + 1.0, -z->alpha);
	return pow((double) rank + 1.0, -z->alpha) / h;
}

/*
 * Vose's construction of Walker's alias table: scale each probability by n,
 * then repeatedly pair a column below 1 with one above 1, which donates the
 * missing mass.  Columns left over are exactly 1 up to rounding.
 */
int
fc_zipf_init(fc_zipf *z, uint32_t n, double alpha)
{
	double	   *p;
	uint32_t   *small;
	uint32_t   *large;
	uint32_t	ns = 0;
	uint32_t	nl = 0;
	double		h = 0.0;

	z->n = n;
	z->alpha = alpha;
	z->threshold = NULL;
	z->alias = NULL;
	if (n == 0)
		return -1;

	p = malloc(sizeof(double) * n);
	small = malloc(sizeof(uint32_t) * n);
	large = malloc(sizeof(uint32_t) * n);
	z->threshold = malloc(sizeof(uint64_t) * n);
	z->alias = malloc(sizeof(uint32_t) * n);
	if (!p || !small || !large || !z->threshold || !z->alias)
	{
		free(p);
		free(small);
		free(large);
		fc_zipf_free(z);
		return -1;
	}

	for (uint32_t k = 0; k < n; k++)
		h += (p[k] = pow((double) k + 1.0, -alpha));
	for (uint32_t k = 0; k < n; k++)
	{
		p[k] = p[k] / h * n;
		if (p[k] < 1.0)
			small[ns++] = k;
		else
			large[nl++] = k;
	}
	while (ns > 0 && nl > 0)
	{
		uint32_t	s = small[--ns];
		uint32_t	l = large[nl - 1];

		z->threshold[s] = (uint64_t) (p[s] * 4294967296.0);
		z->alias[s] = l;
		p[l] -= 1.0 - p[s];
		if (p[l] < 1.0)
		{
			nl--;
			small[ns++] = l;
		}
	}
	while (nl > 0)
	{
		uint32_t	l = large[--nl];

		z->threshold[l] = (uint64_t) 1 << 32;
		z->alias[l] = l;
	}
	while (ns > 0)
	{
		uint32_t	s = small[--ns];

		z->threshold[s] = (uint64_t) 1 << 32;
		z->alias[s] = s;
	}

	free(p);
	free(small);
	free(large);
	return 0;
}

void
fc_zipf_free(fc_zipf *z)
{
	free(z->threshold);
	free(z->alias);
	z->threshold = NULL;
	z->alias = NULL;
}
