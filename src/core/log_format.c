/*-------------------------------------------------------------------------
 *
 * log_format.c
 *	  Sealing, validating and walking logical log records.
 *
 *-------------------------------------------------------------------------
 */
#include "log_format.h"

#include <string.h>

#include "crc32c.h"

void
fc_log_seal(void *record, uint64_t lsn)
{
	fc_log_header *hdr = (fc_log_header *) record;

	hdr->lsn = lsn;
	hdr->crc = fc_crc32c((const char *) record + sizeof(uint32_t),
						 hdr->len - sizeof(uint32_t));
}

fc_log_check
fc_log_validate(const void *buf, size_t avail, uint64_t lsn, uint32_t max_len,
				uint32_t *need)
{
	fc_log_header hdr;

	if (avail < FC_LOG_HEADER_SIZE)
	{
		*need = FC_LOG_HEADER_SIZE;
		return FC_LOG_SHORT;
	}
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.len < FC_LOG_HEADER_SIZE || hdr.len > max_len ||
		hdr.lsn != lsn || hdr.kind == 0 || hdr.kind > FC_REC_KIND_MAX)
		return FC_LOG_INVALID;
	if (avail < hdr.len)
	{
		*need = hdr.len;
		return FC_LOG_SHORT;
	}
	if (fc_crc32c((const char *) buf + sizeof(uint32_t),
				  hdr.len - sizeof(uint32_t)) != hdr.crc)
		return FC_LOG_INVALID;
	return FC_LOG_VALID;
}

void
fc_log_cursor_init(fc_log_cursor *cur, const fc_log_header *rec)
{
	cur->pos = (const char *) rec + FC_LOG_HEADER_SIZE;
	cur->end = (const char *) rec + rec->len;
	cur->left = rec->nentries;
	cur->corrupt = 0;
}

int
fc_log_next_row(fc_log_cursor *cur, const fc_log_row **row, const char **image)
{
	const fc_log_row *r;
	uint64_t	size;

	if (cur->left <= 0)
		return 0;
	if ((size_t) (cur->end - cur->pos) < sizeof(fc_log_row))
	{
		cur->corrupt = 1;
		return 0;
	}
	r = (const fc_log_row *) cur->pos;
	size = fc_log_row_size(r->len);
	if ((size_t) (cur->end - cur->pos) < size)
	{
		cur->corrupt = 1;
		return 0;
	}
	*row = r;
	*image = cur->pos + sizeof(fc_log_row);
	cur->pos += size;
	cur->left--;
	return 1;
}

int
fc_log_next_ddl(fc_log_cursor *cur, const fc_log_ddl **ddl)
{
	if (cur->left <= 0)
		return 0;
	if ((size_t) (cur->end - cur->pos) < sizeof(fc_log_ddl))
	{
		cur->corrupt = 1;
		return 0;
	}
	*ddl = (const fc_log_ddl *) cur->pos;
	cur->pos += sizeof(fc_log_ddl);
	cur->left--;
	return 1;
}

uint32_t
fc_log_call_size(uint32_t nslots, uint32_t nargs, uint32_t args_len,
				 uint32_t search_path_len)
{
	uint64_t	size = FC_LOG_HEADER_SIZE + sizeof(fc_log_call) +
		(uint64_t) nslots * sizeof(fc_log_call_slot) +
		FC_LOG_ALIGNED((uint64_t) nargs * sizeof(fc_log_call_arg)) +
		FC_LOG_ALIGNED((uint64_t) args_len) +
		FC_LOG_ALIGNED((uint64_t) search_path_len);

	return size > UINT32_MAX ? UINT32_MAX : (uint32_t) size;
}

int
fc_log_call_parse(const fc_log_header *rec, fc_log_call_view *view)
{
	const char *pos = (const char *) rec + FC_LOG_HEADER_SIZE;
	const fc_log_call *call = (const fc_log_call *) pos;

	if (rec->kind != FC_REC_CALL ||
		rec->len < FC_LOG_HEADER_SIZE + sizeof(fc_log_call) ||
		fc_log_call_size(rec->nentries, call->nargs, call->args_len,
						 call->search_path_len) != rec->len)
		return 0;
	pos += sizeof(fc_log_call);
	view->call = call;
	view->slots = (const fc_log_call_slot *) pos;
	pos += (size_t) rec->nentries * sizeof(fc_log_call_slot);
	view->args = (const fc_log_call_arg *) pos;
	pos += FC_LOG_ALIGNED((uint64_t) call->nargs * sizeof(fc_log_call_arg));
	view->arg_data = pos;
	pos += FC_LOG_ALIGNED((uint64_t) call->args_len);
	view->search_path = pos;
	return 1;
}
