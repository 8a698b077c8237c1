/*-------------------------------------------------------------------------
 *
 * ckpt_policy.c
 *	  SLACH's adaptive checkpoint threshold (pure C).
 *
 *-------------------------------------------------------------------------
 */
#include "ckpt_policy.h"

#include <math.h>

/* F(load): 0 at or below LW, 1 at or above HW, a power curve between. */
double
fc_ckpt_policy_f(const fc_ckpt_policy_params *p, double load)
{
	if (load <= p->low_watermark)
		return 0.0;
	if (load >= p->high_watermark || p->high_watermark <= p->low_watermark)
		return 1.0;
	return pow((load - p->low_watermark) / (p->high_watermark - p->low_watermark),
			   p->beta);
}

/* Fold one sampling window (commits over seconds) into the state. */
void
fc_ckpt_policy_sample(fc_ckpt_policy_state *st, const fc_ckpt_policy_params *p,
					  double commits, double seconds)
{
	double		sample = seconds > 0 ? commits / seconds : 0.0;
	double		peak;

	if (!st->primed)
	{
		st->rate = sample;
		st->primed = 1;
	}
	else
		st->rate = p->alpha * st->rate + (1.0 - p->alpha) * sample;
	if (sample > st->max_sample)
		st->max_sample = sample;
	peak = p->peak_rate > 0 ? p->peak_rate : st->max_sample;
	st->load = peak > 0 ? st->rate / peak : 0.0;
	if (st->load > 1.0)
		st->load = 1.0;
	st->threshold = p->lower_bound +
		fc_ckpt_policy_f(p, st->load) * (p->upper_bound - p->lower_bound);
}
