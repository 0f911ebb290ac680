-- bench/stats.lua — wrk script for plain GETs: done() prints one "KIRESULT"
-- line for the driver.

function done(summary, latency, requests)
	local e = summary.errors
	io.write(string.format("KIRESULT rps=%.1f requests=%d p50_us=%d " ..
	    "p99_us=%d errors=%d status_errors=%d\n",
	    summary.requests / (summary.duration / 1e6), summary.requests,
	    latency:percentile(50), latency:percentile(99),
	    e.connect + e.read + e.write + e.timeout, e.status))
end
