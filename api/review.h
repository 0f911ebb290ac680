/* api/review.h — the reviews kubectl's `auth can-i` and `auth whoami`
 * send: SelfSubjectAccessReview, SelfSubjectRulesReview
 * (authorization.k8s.io/v1) and SelfSubjectReview (authentication.k8s.io/v1),
 * answered from the caller's token, role and scope, and the discovery
 * documents of those two groups. */
#ifndef API_REVIEW_H
#define API_REVIEW_H

#include <stddef.h>

#include "api/auth.h"
#include "api/service.h"

#define API_AUTHZ_PREFIX "/apis/authorization.k8s.io/v1"
#define API_AUTHN_PREFIX "/apis/authentication.k8s.io/v1"

/* What a review needs to know of the caller: who (borrowed) and whether
 * this server lets anonymous clients read. */
typedef struct api_reviewer {
	const api_principal *who;
	int anonymous_reads;
} api_reviewer;

/* Serves path (under /apis/authorization.k8s.io or
 * /apis/authentication.k8s.io) for method with body of media type mt
 * (JSON, or application/vnd.kubernetes.protobuf: kubectl sends built-in
 * kinds so): the group and version
 * documents (GET) and the reviews (POST), answered in JSON. Returns 0 when
 * path is not one of these (r untouched), 1 when r holds the answer. */
int api_review_route(api_ctx *ctx, const api_reviewer *rv, const char *method,
	const char *path, const char *body, size_t len, const char *mt,
	api_resp *r);

/* Appends the group entries of these groups, for /apis: each begins with
 * a comma. */
void api_review_groups(ki_buf *b);

#endif
