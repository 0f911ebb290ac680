/* store/etcd_quota.c — etcd's space quota: what the store does once etcd
 * refuses writes because its database reached --quota-backend-bytes (2 GiB
 * by default) and raised its NOSPACE alarm.
 *
 * etcd then refuses every Txn that writes, until an operator frees space
 * and disarms the alarm; reads go on. Every write the store commits is
 * answered KI_EQUOTA (507, api/status.c, with what the operator does);
 * the operator hears of it once, at error level, through the store's log
 * hook, not once per refused request; the first write that commits after
 * the alarm is disarmed re-arms the report and says so. Nothing is
 * retried: the alarm stays until someone acts. */
#include <string.h>

#include "store/etcd_int.h"

int
et_quota_refused(et_store *e, const char *msg)
{
	if (__atomic_exchange_n(&e->quota_hit, 1, __ATOMIC_ACQ_REL) == 0)
		store_log((const store *)(const void *)e, STORE_LOG_ERROR, "etcd refuses writes: "
		    "its space quota (--quota-backend-bytes) is exhausted "
		    "(\"%s\"); every write is answered 507 until the operator "
		    "frees space: etcdctl compact REVISION, etcdctl defrag on "
		    "each member, etcdctl alarm disarm (or a larger "
		    "--quota-backend-bytes, then alarm disarm); reads are "
		    "still served", msg);
	return KI_EQUOTA;
}

void
et_quota_wrote(et_store *e)
{
	if (__atomic_load_n(&e->quota_hit, __ATOMIC_ACQUIRE) != 0 &&
	    __atomic_exchange_n(&e->quota_hit, 0, __ATOMIC_ACQ_REL) != 0)
		store_log((const store *)(const void *)e, STORE_LOG_INFO, "etcd takes writes again "
		    "(its space quota has room)");
}
