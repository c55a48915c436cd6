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
  -- Each wrk thread has its own random sequence (think times) and starts at a different place in the list.
  math.randomseed(os.time() + tonumber(tostring({}):match("0x(%x+)") or "0", 16) % 1000003)
  counter = math.random(#paths)
end

-- WRK_THINK_MS > 0: after each response a connection waits a random time, exponentially distributed with
-- that mean (a student reading the page): arrivals like those of many independent readers, not a
-- lock-step burst every period.
local think = tonumber(os.getenv("WRK_THINK_MS") or "0")
-- wrk waits a delay() before a connection's first request too, so the 64 connections start at independent
-- random times, as readers arriving do, not in one burst at the first instant. (Behind the image's nginx an idle
-- connection costs gunicorn nothing; gunicorn alone would hold one of its threads for each, up to 5 s.)
if think > 0 then
  function delay()
    -- Capped at 4 means (4 s), under nginx's 15 s keep-alive: a longer pause would find the connection
    -- closed, which a browser reopens on its own but wrk counts as an error and a slow request.
    return math.floor(math.min(-think * math.log(1 - math.random()), 4 * think))
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
