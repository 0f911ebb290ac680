/* api/status.c — building and rendering Kubernetes Status objects. */
#include "api/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/version.h"
#include "lib/log.h"

void
api_status_init(api_status *st)
{
	memset(st, 0, sizeof(*st));
}

void
api_status_free(api_status *st)
{
	for (size_t i = 0; i < st->ncauses; i++) {
		free(st->causes[i].field);
		free(st->causes[i].message);
	}
	free(st->causes);
	free(st->message);
	free(st->detail_name);
	api_status_init(st);
}

static char *
vformat(const char *fmt, va_list ap)
{
	ki_buf b;

	ki_buf_init(&b);
	ki_buf_vprintf(&b, fmt, ap);
	return ki_buf_steal(&b, NULL);
}

void
api_status_fail(api_status *st, int code, const char *reason,
	const char *fmt, ...)
{
	va_list ap;

	st->code = code;
	st->reason = reason;
	free(st->message);
	va_start(ap, fmt);
	st->message = vformat(fmt, ap);
	va_end(ap);
	if (st->message == NULL)
		st->oom = 1;
}

void
api_status_cause(api_status *st, const char *reason, const char *field,
	const char *fmt, ...)
{
	api_cause *c;
	va_list ap;

	if (st->ncauses >= API_MAX_CAUSES)
		return;
	if (st->ncauses == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 8;
		api_cause *n = realloc(st->causes, cap * sizeof(*n));

		if (n == NULL) {
			st->oom = 1;
			return;
		}
		st->causes = n;
		st->cap = cap;
	}
	c = &st->causes[st->ncauses];
	c->reason = reason;
	c->field = strdup(field);
	va_start(ap, fmt);
	c->message = vformat(fmt, ap);
	va_end(ap);
	if (c->field == NULL || c->message == NULL) {
		free(c->field);
		free(c->message);
		st->oom = 1;
		return;
	}
	st->ncauses++;
}

void
api_status_details(api_status *st, const char *kind, const char *name)
{
	st->detail_kind = kind;
	free(st->detail_name);
	st->detail_name = name ? strdup(name) : NULL;
}

static void
put_str(ki_buf *out, const char *s)
{
	ki_buf_json_string(out, s, strlen(s));
}

void
api_status_render(const api_status *st, ki_buf *out)
{
	ki_buf msg;

	ki_buf_init(&msg);
	if (st->message != NULL) {
		ki_buf_puts(&msg, st->message);
	} else {
		ki_buf_printf(&msg, "%s \"%s\" is invalid: ",
		    st->detail_kind ? st->detail_kind : "object",
		    st->detail_name ? st->detail_name : "");
		for (size_t i = 0; i < st->ncauses; i++)
			ki_buf_printf(&msg, "%s%s: %s", i ? ", " : "",
			    st->causes[i].field, st->causes[i].message);
	}
	ki_buf_puts(out, "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
	    "\"metadata\":{},\"status\":\"Failure\",\"message\":");
	ki_buf_json_string(out, msg.data ? msg.data : "", msg.len);
	ki_buf_puts(out, ",\"reason\":");
	put_str(out, st->reason ? st->reason : "InternalError");
	if (st->detail_kind != NULL || st->detail_name != NULL ||
	    st->ncauses > 0) {
		ki_buf_puts(out, ",\"details\":{");
		if (st->detail_name != NULL) {
			ki_buf_puts(out, "\"name\":");
			put_str(out, st->detail_name);
			ki_buf_putc(out, ',');
		}
		ki_buf_puts(out, "\"group\":\"" API_GROUP "\"");
		if (st->detail_kind != NULL) {
			ki_buf_puts(out, ",\"kind\":");
			put_str(out, st->detail_kind);
		}
		if (st->ncauses > 0) {
			ki_buf_puts(out, ",\"causes\":[");
			for (size_t i = 0; i < st->ncauses; i++) {
				ki_buf_puts(out, i ? ",{\"reason\":" : "{\"reason\":");
				put_str(out, st->causes[i].reason);
				ki_buf_puts(out, ",\"message\":");
				put_str(out, st->causes[i].message);
				ki_buf_puts(out, ",\"field\":");
				put_str(out, st->causes[i].field);
				ki_buf_putc(out, '}');
			}
			ki_buf_putc(out, ']');
		}
		ki_buf_putc(out, '}');
	}
	ki_buf_printf(out, ",\"code\":%d}", st->code ? st->code : 500);
	ki_buf_free(&msg);
}

void
api_status_from_rc(api_status *st, int rc, const char *what)
{
	switch (rc) {
	case KI_ENOMEM:
		api_status_fail(st, 503, "ServiceUnavailable",
		    "%s: the server is out of memory; retry later", what);
		break;
	case KI_EUNAVAIL:
		api_status_fail(st, 503, "ServiceUnavailable",
		    "%s: the store is unavailable for now (its cluster has no "
		    "leader or no member answers); retry later", what);
		break;
	case KI_EFULL:
		api_status_fail(st, 507, "InsufficientStorage",
		    "%s: the store is full; nothing was written", what);
		break;
	case KI_ECORRUPT:
		/* Damaged data is never served; the operator must hear of it. */
		log_error("store: %s: %s", what, ki_strerror(rc));
		api_status_fail(st, 500, "InternalError", "%s: the stored data "
		    "is damaged (it fails its checksum or its digest) and is "
		    "not served; check the store with kernelindexd fsck", what);
		break;
	case KI_EQUOTA:
		/* Logged once by the store (store/etcd_quota.c). */
		api_status_fail(st, 507, "InsufficientStorage",
		    "%s: etcd's space quota (--quota-backend-bytes) is "
		    "exhausted: etcd raised its NOSPACE alarm and refuses every "
		    "write until an operator frees space; nothing was written, "
		    "reads are still served. The operator compacts the "
		    "revision history (etcdctl compact REVISION), defragments "
		    "each member (etcdctl defrag), then disarms the alarm "
		    "(etcdctl alarm disarm); or raises --quota-backend-bytes "
		    "on every member and disarms the alarm", what);
		break;
	case KI_ENOSPC:
		api_status_fail(st, 507, "InsufficientStorage",
		    "%s: the disk holding the store is full; nothing was "
		    "written", what);
		break;
	case KI_ENOTFOUND:
		api_status_fail(st, 404, "NotFound", "%s not found", what);
		break;
	case KI_EEXIST:
		api_status_fail(st, 409, "AlreadyExists", "%s already exists",
		    what);
		break;
	case KI_ECONFLICT:
		api_status_fail(st, 409, "Conflict", "%s: the object has been "
		    "modified; please apply your changes to the latest version "
		    "and try again", what);
		break;
	case KI_ELIMIT:
		api_status_fail(st, 413, "RequestEntityTooLarge",
		    "%s: a limit was exceeded", what);
		break;
	case KI_EGONE:
		api_status_fail(st, 410, "Expired", "%s: too old resource version",
		    what);
		break;
	case KI_EINVAL:
		api_status_fail(st, 400, "BadRequest", "%s: invalid request", what);
		break;
	default:
		api_status_fail(st, 500, "InternalError", "%s: %s", what,
		    ki_strerror(rc));
		break;
	}
}
