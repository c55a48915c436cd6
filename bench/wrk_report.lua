-- wrk script: cycle through the request paths in WRK_PATHS (a file, one "cookie|path" per line,
-- cookie empty for a cookie-less request) and print a JSON summary for bench.http to read.
local paths = {}
local counter = 0

function init(args)
  local file = io.open(os.getenv("WRK_PATHS"), "r")
  for line in file:lines() do
    local cookie, path = line:match("^(.-)|(.*)$")
    local headers = {}
    if cookie ~= "" then headers["Cookie"] = cookie end
    table.insert(paths, wrk.format("GET", path, headers))
  end
  file:close()
  -- Each wrk thread starts at a different place in the list.
  counter = math.random(#paths)
end

-- WRK_DELAY_MS > 0: each connection waits that long after each response (a student reading the page).
local pause = tonumber(os.getenv("WRK_DELAY_MS") or "0")
if pause > 0 then
  function delay()
    return pause
  end
end

function request()
  counter = counter % #paths + 1
  return paths[counter]
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests": %d, "duration_us": %d, "bytes": %d, "connect": %d, "read": %d, "write": %d, ' ..
    '"status": %d, "timeout": %d, "p50_us": %d, "p90_us": %d, "p99_us": %d, "max_us": %d, "mean_us": %f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean))
end
