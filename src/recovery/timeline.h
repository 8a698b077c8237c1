/*-------------------------------------------------------------------------
 *
 * timeline.h
 *	  Which PostgreSQL timeline pg_fastckpt's files belong to.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FC_TIMELINE_H
#define FC_TIMELINE_H

#include "postgres.h"

extern bool fc_timeline_matches(char *error, size_t errlen);
extern void fc_timeline_remember(void);
extern bool fc_timeline_set_aside(char *where, size_t wherelen, char *error,
								  size_t errlen);

#endif							/* FC_TIMELINE_H */
