/*-------------------------------------------------------------------------
 *
 * ckpt_policy.h
 *	  When to checkpoint: the adaptive log-size threshold of SLACH (Zhou et
 *	  al., section 4), pure C.
 *
 * threshold = LB + F(load) * (UB - LB), where load is an exponentially
 * weighted moving average of the commit rate, as a fraction of the peak
 * rate, and F is 0 below the low watermark, 1 above the high one and
 * ((load - LW) / (HW - LW))^beta between: a lightly loaded server
 * checkpoints often (short recovery), a busy one rarely (low overhead).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_CKPT_POLICY_H
#define FC_CKPT_POLICY_H

#include <stdint.h>

typedef struct fc_ckpt_policy_params
{
	double		lower_bound;	/* LB, bytes of log */
	double		upper_bound;	/* UB, bytes of log */
	double		low_watermark;	/* LW, fraction of peak load */
	double		high_watermark; /* HW, fraction of peak load */
	double		beta;			/* exponent of F */
	double		alpha;			/* weight of the previous average */
	double		peak_rate;		/* commits/s counted as full load; 0: the
								 * highest sample seen */
} fc_ckpt_policy_params;

typedef struct fc_ckpt_policy_state
{
	int			primed;			/* has seen a sample */
	double		rate;			/* EWMA of commits per second */
	double		max_sample;		/* highest sample rate seen */
	double		load;			/* rate / peak, in [0, 1] */
	double		threshold;		/* bytes of log that trigger a checkpoint */
} fc_ckpt_policy_state;

extern double fc_ckpt_policy_f(const fc_ckpt_policy_params *p, double load);
extern void fc_ckpt_policy_sample(fc_ckpt_policy_state *st,
								  const fc_ckpt_policy_params *p,
								  double commits, double seconds);

#endif							/* FC_CKPT_POLICY_H */
