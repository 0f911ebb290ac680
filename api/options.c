/* api/options.c — DeleteOptions: what a client asks of a delete besides
 * its target, each member honoured or refused, none ignored. */
#include "api/options.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "api/object.h"

#define fail(r, field, ...) \
	api_resp_fail(r, 400, "BadRequest", field, __VA_ARGS__)

static int
propagation_ok(const char *v, api_resp *r)
{
	if (strcmp(v, "Orphan") == 0 || strcmp(v, "Background") == 0 ||
	    strcmp(v, "Foreground") == 0)
		return 1;
	fail(r, "propagationPolicy", "invalid propagationPolicy \"%.32s\": use "
	    "Orphan, Background or Foreground", v);
	return 0;
}

int
api_delete_query(const char *propagation, const char *grace, api_resp *r)
{
	if (propagation != NULL && *propagation != '\0' &&
	    !propagation_ok(propagation, r))
		return KI_EINVAL;
	if (grace != NULL && *grace != '\0') {
		const char *s = grace + (*grace == '-');

		if (*s == '\0' || strspn(s, "0123456789") != strlen(s)) {
			fail(r, "gracePeriodSeconds", "invalid gracePeriodSeconds "
			    "\"%.32s\": an integer is expected", grace);
			return KI_EINVAL;
		}
	}
	return KI_OK;
}

/* Copies the string or null member v of preconditions into out. */
static int
precondition(struct json_object *v, const char *field, char *out, size_t n,
	api_resp *r)
{
	const char *s;

	if (v == NULL)
		return 0;
	if (!json_object_is_type(v, json_type_string)) {
		fail(r, field, "%s must be a string", field);
		return -1;
	}
	s = json_object_get_string(v);
	if (strlen(s) >= n) {
		fail(r, field, "%s is longer than any the server gives", field);
		return -1;
	}
	snprintf(out, n, "%s", s);
	return 0;
}

static int
member(api_write_opts *o, const char *key, struct json_object *v,
	api_resp *r)
{
	if (strcmp(key, "kind") == 0) {
		if (v == NULL || !json_object_is_type(v, json_type_string) ||
		    strcmp(json_object_get_string(v), "DeleteOptions") != 0) {
			fail(r, "kind", "the body of a DELETE must be a DeleteOptions");
			return -1;
		}
		return 0;
	}
	if (strcmp(key, "apiVersion") == 0) {
		const char *s = json_object_get_string(v);

		if (v == NULL || !json_object_is_type(v, json_type_string) ||
		    (strcmp(s, "v1") != 0 && strcmp(s, "meta.k8s.io/v1") != 0)) {
			fail(r, "apiVersion", "DeleteOptions' apiVersion must be v1 or "
			    "meta.k8s.io/v1");
			return -1;
		}
		return 0;
	}
	if (strcmp(key, "dryRun") == 0) {
		if (v == NULL)
			return 0;
		if (!json_object_is_type(v, json_type_array)) {
			fail(r, "dryRun", "dryRun must be a list");
			return -1;
		}
		for (size_t i = 0; i < json_object_array_length(v); i++) {
			struct json_object *e = json_object_array_get_idx(v, i);

			if (!json_object_is_type(e, json_type_string) ||
			    strcmp(json_object_get_string(e), "All") != 0) {
				fail(r, "dryRun", "invalid dryRun value: the only supported "
				    "value is All");
				return -1;
			}
			o->dry_run = 1;
		}
		return 0;
	}
	if (strcmp(key, "preconditions") == 0) {
		if (v == NULL)
			return 0;
		if (!json_object_is_type(v, json_type_object)) {
			fail(r, "preconditions", "preconditions must be an object");
			return -1;
		}
		json_object_object_foreach(v, pk, pv) {
			if (strcmp(pk, "uid") == 0) {
				if (precondition(pv, "preconditions.uid", o->pre_uid,
				    sizeof(o->pre_uid), r) != 0)
					return -1;
			} else if (strcmp(pk, "resourceVersion") == 0) {
				if (precondition(pv, "preconditions.resourceVersion",
				    o->pre_rv, sizeof(o->pre_rv), r) != 0)
					return -1;
			} else {
				fail(r, "preconditions", "unknown field \"preconditions."
				    "%.64s\": only uid and resourceVersion are known", pk);
				return -1;
			}
		}
		return 0;
	}
	if (strcmp(key, "propagationPolicy") == 0) {
		if (v == NULL)
			return 0;
		if (!json_object_is_type(v, json_type_string)) {
			fail(r, key, "propagationPolicy must be a string");
			return -1;
		}
		return propagation_ok(json_object_get_string(v), r) ? 0 : -1;
	}
	if (strcmp(key, "orphanDependents") == 0) {
		if (v != NULL && !json_object_is_type(v, json_type_boolean)) {
			fail(r, key, "orphanDependents must be true or false");
			return -1;
		}
		return 0;
	}
	if (strcmp(key, "gracePeriodSeconds") == 0) {
		if (v != NULL && !json_object_is_type(v, json_type_int)) {
			fail(r, key, "gracePeriodSeconds must be an integer");
			return -1;
		}
		return 0;
	}
	fail(r, key, "unknown field \"%.64s\" in DeleteOptions: this server "
	    "knows dryRun, preconditions, propagationPolicy, orphanDependents "
	    "and gracePeriodSeconds", key);
	return -1;
}

int
api_delete_options(const char *body, size_t len, int max_depth,
	api_write_opts *o, api_resp *r)
{
	struct json_object *root = NULL;
	api_status st;
	int rc = KI_EINVAL;

	if (len == 0)
		return KI_OK;
	api_status_init(&st);
	if (api_json_parse(body, len, max_depth, &root, &st) != KI_OK) {
		api_resp_status(r, &st);
		goto out;
	}
	if (json_object_is_type(root, json_type_null)) {
		rc = KI_OK;
		goto out;
	}
	if (!json_object_is_type(root, json_type_object)) {
		fail(r, NULL, "the body of a DELETE must be a DeleteOptions object");
		goto out;
	}
	{
		json_object_object_foreach(root, key, v) {
			if (member(o, key, v, r) != 0)
				goto out;
		}
	}
	rc = KI_OK;
out:
	json_object_put(root);
	api_status_free(&st);
	return rc;
}

int
api_preconditions_hold(const api_write_opts *opt, const api_kind *k,
	const store_obj *o, api_resp *r)
{
	char rvs[24];

	snprintf(rvs, sizeof(rvs), "%llu", (unsigned long long)o->rv);
	if (opt->pre_rv[0] != '\0' && strcmp(opt->pre_rv, rvs) != 0) {
		api_resp_fail(r, 409, "Conflict", "metadata.resourceVersion",
		    "Operation cannot be fulfilled on %s.%s \"%.*s\": the "
		    "precondition failed: resourceVersion in precondition: %s, "
		    "resourceVersion in object meta: %s", k->plural, API_GROUP,
		    (int)o->name_len, o->name, opt->pre_rv, rvs);
		return 0;
	}
	if (opt->pre_uid[0] != '\0') {
		struct json_object *meta = api_json_parse_len(o->json + o->meta_off,
		    o->meta_len);
		const char *uid = meta != NULL ? api_json_str_at(meta, "uid", NULL) :
		    NULL;
		int ok = uid != NULL && strcmp(uid, opt->pre_uid) == 0;

		if (!ok)
			api_resp_fail(r, 409, "Conflict", "metadata.uid",
			    "Operation cannot be fulfilled on %s.%s \"%.*s\": the "
			    "precondition failed: UID in precondition: %s, UID in "
			    "object meta: %s", k->plural, API_GROUP, (int)o->name_len,
			    o->name, opt->pre_uid, uid ? uid : "");
		json_object_put(meta);
		return ok;
	}
	return 1;
}
