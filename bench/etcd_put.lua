-- bench/etcd_put.lua — wrk script: one etcd v3 put per request through the
-- HTTP/JSON gateway (POST /v3/kv/put), each under a new key, the value being
-- the same document bytes kernelindexd is sent.
--
-- wrk ... -s etcd_put.lua http://127.0.0.1:PORT/v3/kv/put -- TAG VALUE_B64_FILE
-- done() prints one "KIRESULT" line for the driver.

local nthreads = 0

function setup(thread)
	nthreads = nthreads + 1
	thread:set("tid", nthreads)
end

local alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

local function b64(s)
	local out = {}
	for i = 1, #s, 3 do
		local a, b, c = s:byte(i, i + 2)
		local n = a * 65536 + (b or 0) * 256 + (c or 0)
		local q = {}
		for k = 3, 0, -1 do
			local v = math.floor(n / 64 ^ k) % 64
			q[#q + 1] = alphabet:sub(v + 1, v + 1)
		end
		if c == nil then q[4] = "=" end
		if b == nil then q[3] = "=" end
		out[#out + 1] = table.concat(q)
	end
	return table.concat(out)
end

function init(args)
	tag = args[1]
	local f = assert(io.open(args[2], "rb"))
	value = f:read("*a"):gsub("%s+$", "")
	f:close()
	hdrs = { ["Content-Type"] = "application/json" }
	n = 0
end

function request()
	n = n + 1
	local key = "/kernelindex/benchmarkruns/" .. tag .. "-" .. tid .. "-" .. n
	return wrk.format("POST", nil, hdrs,
	    '{"key":"' .. b64(key) .. '","value":"' .. value .. '"}')
end

function done(summary, latency, requests)
	local e = summary.errors
	io.write(string.format("KIRESULT rps=%.1f requests=%d p50_us=%d " ..
	    "p99_us=%d errors=%d status_errors=%d\n",
	    summary.requests / (summary.duration / 1e6), summary.requests,
	    latency:percentile(50), latency:percentile(99),
	    e.connect + e.read + e.write + e.timeout, e.status))
end
