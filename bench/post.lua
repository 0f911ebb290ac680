-- bench/post.lua — wrk script: POST one bundle per request, each with a new
-- run name and sourceNative.externalId, so that every request stores a new
-- run while the bundle's protocol and environment stay the same.
--
-- wrk ... -s post.lua URL -- TAG TEMPLATE [RATE]
--   TAG       lowercase letters/digits, unique per wrk invocation
--   TEMPLATE  the bundle with "@ID@" where the unique part goes (twice)
--   RATE      optional: requests/s per connection (open loop, delay())
-- done() prints one "KIRESULT" line for the driver.

local nthreads = 0

function setup(thread)
	nthreads = nthreads + 1
	thread:set("tid", nthreads)
end

function init(args)
	tag = args[1]
	local f = assert(io.open(args[2], "rb"))
	local t = f:read("*a")
	f:close()
	local i = assert(t:find("@ID@", 1, true))
	local j = assert(t:find("@ID@", i + 4, true))
	p1, p2, p3 = t:sub(1, i - 1), t:sub(i + 4, j - 1), t:sub(j + 4)
	hdrs = { ["Content-Type"] = "application/json" }
	n = 0
	if args[3] ~= nil then
		-- wrk's delay() is the pause before a connection's next request.
		-- Every thread gets the same number of connections.
		pause = 1000 / tonumber(args[3])
	end
end

function delay()
	return pause or 0
end

function request()
	n = n + 1
	local id = tag .. "-" .. tid .. "-" .. n
	return wrk.format("POST", nil, hdrs, p1 .. id .. p2 .. id .. p3)
end

function done(summary, latency, requests)
	local e = summary.errors
	io.write(string.format("KIRESULT rps=%.1f requests=%d p50_us=%d " ..
	    "p99_us=%d errors=%d status_errors=%d\n",
	    summary.requests / (summary.duration / 1e6), summary.requests,
	    latency:percentile(50), latency:percentile(99),
	    e.connect + e.read + e.write + e.timeout, e.status))
end
