-- bench/post.lua — wrk script: POST one bundle per request, each with a new
-- run name and sourceNative.externalId, so that every request stores a new
-- run while the bundle's protocol and environment stay the same.
--
-- wrk ... -s post.lua URL -- TAG TEMPLATE [STATUS]
--   TAG       lowercase letters/digits, unique per wrk invocation
--   TEMPLATE  the bundle with "@ID@" where the unique part goes (twice)
--   STATUS    optional: count answers with another status as "bad" (this
--             makes wrk parse every answer, so it is left out where the
--             client's CPU matters)
-- done() prints one "KIRESULT" line for the driver.

local threads = {}

function setup(thread)
	threads[#threads + 1] = thread
	thread:set("tid", #threads)
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
	bad = 0
	if args[3] ~= nil then
		local want = tonumber(args[3])
		response = function(status)
			if status ~= want then
				bad = bad + 1
			end
		end
	end
end

function request()
	n = n + 1
	local id = tag .. "-" .. tid .. "-" .. n
	return wrk.format("POST", nil, hdrs, p1 .. id .. p2 .. id .. p3)
end

function done(summary, latency, requests)
	local e = summary.errors
	local nbad = 0
	for _, t in ipairs(threads) do
		nbad = nbad + (t:get("bad") or 0)
	end
	io.write(string.format("KIRESULT rps=%.1f requests=%d p50_us=%d " ..
	    "p99_us=%d errors=%d status_errors=%d bad=%d\n",
	    summary.requests / (summary.duration / 1e6), summary.requests,
	    latency:percentile(50), latency:percentile(99),
	    e.connect + e.read + e.write + e.timeout, e.status, nbad))
end
