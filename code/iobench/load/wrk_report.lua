-- iobench's wrk script: after the run, print one machine-readable line with the
-- totals, the error counts and the latency distribution (microseconds).
--   IOBENCH {"requests": ..., "duration_us": ..., "p50_us": ..., ...}
-- Used as: wrk -s code/iobench/load/wrk_report.lua ...
-- IOBENCH_CONNECTION_CLOSE=1: every request asks to close its connection.
-- IOBENCH_PIPELINE=N (> 1): every write holds N requests, sent before any answer comes back
-- (TechEmpower's plaintext test pipelines 16); wrk counts each response as a request, but
-- records one latency per batch while its percentiles divide by the responses, so they
-- come out as 0 (wg/wrk issue 236): the line says "pipeline", and the parser drops them.
local connection_close = os.getenv("IOBENCH_CONNECTION_CLOSE") == "1"
local pipeline = tonumber(os.getenv("IOBENCH_PIPELINE") or "1") or 1
local batch = nil

function init(args)
  if connection_close then
    wrk.headers["Connection"] = "close"
  end
  if pipeline > 1 then
    local one = wrk.format()
    batch = string.rep(one, pipeline)
  end
end

if pipeline > 1 then
  function request()
    return batch
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local fields = {
    string.format('"requests": %d', summary.requests),
    string.format('"duration_us": %d', summary.duration),
    string.format('"bytes": %d', summary.bytes),
    string.format('"errors_connect": %d', e.connect),
    string.format('"errors_read": %d', e.read),
    string.format('"errors_write": %d', e.write),
    string.format('"errors_status": %d', e.status),
    string.format('"errors_timeout": %d', e.timeout),
    string.format('"latency_mean_us": %.1f', latency.mean),
    string.format('"latency_stdev_us": %.1f', latency.stdev),
    string.format('"latency_max_us": %d', latency.max),
    string.format('"pipeline": %d', pipeline),
  }
  for _, p in ipairs({50, 90, 99, 99.9}) do
    local name = string.gsub(tostring(p), "%.", "_")
    table.insert(fields, string.format('"p%s_us": %d', name, latency:percentile(p)))
  end
  io.write("IOBENCH {" .. table.concat(fields, ", ") .. "}\n")
end
