/* api/discovery.c — /version and the discovery documents kubectl reads. */
#include <stdio.h>
#include <string.h>

#include "api/review.h"
#include "api/service.h"

#define VERBS "[\"create\",\"delete\",\"get\",\"list\",\"patch\",\"update\",\"watch\"]"

void
api_version(api_resp *r)
{
	/* kubectl's dispatcher picks its binary from "minor": keep 32. */
	ki_buf_puts(&r->body, "{\"major\":\"1\",\"minor\":\"32\","
	    "\"gitVersion\":\"v1.32.0-kernelindex-" PACKAGE_VERSION "\","
	    "\"gitCommit\":\"0\",\"gitTreeState\":\"clean\","
	    "\"buildDate\":\"2026-01-01T00:00:00Z\",\"goVersion\":\"n/a\","
	    "\"compiler\":\"n/a\",\"platform\":\"linux/amd64\"}");
	r->code = 200;
}

void
api_discovery_api(api_resp *r)
{
	/* No core group: advertising v1 with nothing in it breaks kubectl. */
	ki_buf_puts(&r->body, "{\"kind\":\"APIVersions\",\"versions\":[],"
	    "\"serverAddressByClientCIDRs\":[]}");
	r->code = 200;
}

static void
group_entry(ki_buf *b)
{
	ki_buf_puts(b, "{\"name\":\"" API_GROUP "\",\"versions\":[{"
	    "\"groupVersion\":\"" API_GROUP_VERSION "\",\"version\":\""
	    API_VERSION "\"}],\"preferredVersion\":{\"groupVersion\":\""
	    API_GROUP_VERSION "\",\"version\":\"" API_VERSION "\"}}");
}

void
api_discovery_apis(api_resp *r, int aggregated)
{
	(void)aggregated;
	ki_buf_puts(&r->body, "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\","
	    "\"groups\":[");
	group_entry(&r->body);
	api_review_groups(&r->body);
	ki_buf_puts(&r->body, "]}");
	r->code = 200;
}

void
api_discovery_group(api_resp *r)
{
	ki_buf_puts(&r->body, "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",");
	/* The same members as a group entry, inside this object. */
	{
		ki_buf g;

		ki_buf_init(&g);
		group_entry(&g);
		if (g.data != NULL && g.len > 2)
			ki_buf_append(&r->body, g.data + 1, g.len - 1);
		ki_buf_free(&g);
	}
	r->code = 200;
}

void
api_discovery_resources(api_resp *r)
{
	ki_buf *b = &r->body;

	ki_buf_puts(b, "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\","
	    "\"groupVersion\":\"" API_GROUP_VERSION "\",\"resources\":[");
	for (int id = 1; id <= API_NKINDS; id++) {
		const api_kind *k = api_kind_by_id(id);

		ki_buf_printf(b, "%s{\"name\":\"%s\",\"singularName\":\"%s\","
		    "\"namespaced\":false,\"kind\":\"%s\",\"verbs\":" VERBS ","
		    "\"shortNames\":[\"%s\"],\"categories\":[\"kernelindex\"]}",
		    id > 1 ? "," : "", k->plural, k->singular, k->kind,
		    k->short_name);
	}
	/* Answered and not stored, as SelfSubjectAccessReview: create only. */
	ki_buf_puts(b, ",{\"name\":\"comparisons\",\"singularName\":"
	    "\"comparison\",\"namespaced\":false,\"kind\":\"Comparison\","
	    "\"verbs\":[\"create\"],\"shortNames\":[\"kcmp\"]}");
	ki_buf_puts(b, "]}");
	r->code = 200;
}
